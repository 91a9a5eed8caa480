// The registrar's lifecycle (upstream node-driver-registrar's main + nodeRegister):
//   1. connect to the driver's socket, waiting as long as it takes (the driver may start after
//      us), then GetPluginInfo within --timeout: its name names the registration socket; any
//      error there is fatal (the orchestrator restarts us);
//   2. serve pluginregistration.Registration on `<plugin-registration-path>/<driver>-reg.sock`
//      (socket.ts): GetInfo answers {CSIPlugin, name, --kubelet-registration-path, ["1.0.0"]};
//   3. the kubelet's NotifyRegistrationStatus(false) is fatal (upstream exits 1 so the
//      container restarts and registration is tried afresh): logged with the kubelet's error,
//      then startRegistrar rejects with RegistrationRefusedError;
//   4. on `signal` (SIGTERM) the socket is removed, which deregisters the driver, and
//      startRegistrar resolves.
// Unlike upstream, a refused registration also removes the socket: the process is going away,
// and a socket nobody serves would only make the kubelet retry GetInfo against it.

import {
  CsikitError,
  errorMessage,
  realClock,
  silentLogger,
  whenAborted,
  type Logger,
} from "../../base/index.ts";
import { CsiClient, type PluginInfo, type RegistrationService } from "../../csi/index.ts";
import { PPROF_PREFIX, pprofRoute, startHttpEndpoint, type RouteHandler } from "../../kube/diagnostics.ts";
import { registrationHealthRoute } from "./health.ts";
import type { RegistrarOptions } from "./options.ts";
import { registrationSocketPath, serveRegistrationSocket } from "./socket.ts";

/** The plugin type kubelet's CSI handler accepts. */
export const CSI_PLUGIN_TYPE = "CSIPlugin";
/** The versions every registrar offers (kubelet's CSI handler wants 1.x). */
export const SUPPORTED_VERSIONS: readonly string[] = ["1.0.0"];

const DEFAULT_TIMEOUT_MS = 1000;

/** The kubelet answered NotifyRegistrationStatus(plugin_registered=false). */
export class RegistrationRefusedError extends CsikitError {
  constructor(kubeletError: string) {
    super(
      "CSIKIT_ERR_REGISTRATION_REFUSED",
      `the kubelet refused the registration: ${kubeletError || "(no reason given)"}; restarting registration`,
    );
    this.name = "RegistrationRefusedError";
  }
}

/** Asks the driver its name: connection without limit, GetPluginInfo within `timeoutMs`. */
async function driverName(options: RegistrarOptions, logger: Logger, signal: AbortSignal): Promise<string> {
  const client = CsiClient.connect(options.csiAddress, { logger });
  try {
    logger.info(1, "Attempting to open a gRPC connection", { csiAddress: options.csiAddress });
    await client.waitForConnection({ signal, clock: options.clock ?? realClock });
    logger.info(1, "Calling CSI driver to discover driver name");
    let info;
    try {
      info = await client.identity.getPluginInfo(
        {},
        { timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, signal },
      );
    } catch (error) {
      signal.throwIfAborted();
      throw new CsikitError("CSIKIT_ERR_DRIVER", `error retrieving CSI driver name: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    if (info.name === "")
      throw new CsikitError("CSIKIT_ERR_DRIVER", "error retrieving CSI driver name: driver name is empty");
    logger.info(2, "CSI driver name", { driver: info.name });
    return info.name;
  } finally {
    client.close();
  }
}

function registrationService(
  info: PluginInfo,
  logger: Logger,
  refused: (error: RegistrationRefusedError) => void,
): RegistrationService {
  return {
    getInfo: () => {
      logger.info(2, "Received GetInfo call");
      return Promise.resolve(info);
    },
    notifyRegistrationStatus: (status) => {
      logger.info(1, "Received NotifyRegistrationStatus call", {
        pluginRegistered: status.pluginRegistered,
        error: status.error,
      });
      // Answer first, then stop: the kubelet's call completes, and stopping does not wait on it.
      if (!status.pluginRegistered) {
        logger.error("Registration process failed, restarting registration container", {
          error: status.error,
        });
        setImmediate(() => refused(new RegistrationRefusedError(status.error)));
      }
      return Promise.resolve({});
    },
  };
}

/** Runs the registrar until `signal` aborts (resolves) or the kubelet refuses it (rejects). */
export async function startRegistrar(options: RegistrarOptions, signal: AbortSignal): Promise<void> {
  const logger = options.logger ?? silentLogger;
  if (options.kubeletRegistrationPath === "")
    throw new CsikitError("CSIKIT_ERR_CONFIG", "kubeletRegistrationPath is required");
  let name: string;
  try {
    name = await driverName(options, logger, signal);
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
  const info: PluginInfo = {
    type: CSI_PLUGIN_TYPE,
    name,
    endpoint: options.kubeletRegistrationPath,
    supportedVersions: [...SUPPORTED_VERSIONS],
  };
  const stop = new AbortController();
  let refusal: RegistrationRefusedError | undefined;
  const service = registrationService(info, logger, (error) => {
    refusal ??= error;
    stop.abort(error);
  });
  const socketPath = registrationSocketPath(options.pluginRegistrationPath, name);
  logger.info(0, "Starting Registration Server", { socketPath });
  const socket = await serveRegistrationSocket({ path: socketPath, service, logger });
  const diagnostics = new AbortController();
  try {
    logger.info(0, "Registration Server started", { socketPath });
    let httpUrl: string | undefined;
    if (options.httpEndpoint) {
      const routes: Record<string, RouteHandler> = {
        "/healthz": registrationHealthRoute({
          socketPath,
          driverName: name,
          timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          logger,
        }),
      };
      if (options.enablePprof) routes[PPROF_PREFIX] = pprofRoute;
      const endpoint = await startHttpEndpoint(
        { address: options.httpEndpoint, routes, logger },
        diagnostics.signal,
      );
      httpUrl = endpoint.url;
    }
    options.onServing?.({ socketPath, driverName: name, ...(httpUrl === undefined ? {} : { httpUrl }) });
    await Promise.race([whenAborted(signal), whenAborted(stop.signal)]);
  } finally {
    diagnostics.abort();
    await socket.close();
  }
  if (refusal) throw refusal;
  logger.info(0, "Registration socket removed, driver deregistered", { socketPath });
}
