// The kubelet's plugin registration for CSI drivers: on a new socket in plugins_registry/,
// GetInfo → validate (type CSIPlugin, a name, a CSI version below 2.0.0) → connect to the
// driver's endpoint → NodeGetInfo + NodeGetCapabilities → install the driver in CSINode, the
// Node's node-ID annotation and topology labels → NotifyRegistrationStatus(true). Any failure
// answers NotifyRegistrationStatus(false, error); a NodeGetInfo failure also removes the
// driver's entries. A socket that disappears deregisters its driver. Replies shaped like an
// upstream csi-node-driver-registrar's (endpoint may be empty: the socket itself then).

import { CsikitError, errorMessage, type Logger } from "../base/index.ts";
import type { CsiClient, PluginInfo } from "../csi/index.ts";
import type { DriverRegistry } from "./drivers.ts";
import type { NodeInfoManager } from "./node-info.ts";
import type { PluginSocketHandler } from "./plugin-watcher.ts";

export const CSI_PLUGIN_TYPE = "CSIPlugin";
const GET_INFO_TIMEOUT_MS = 10_000;

/** Parses "1.0.0" / "v0.3" into numbers; undefined when not a version. */
export function parseVersion(text: string): number[] | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(text.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

/**
 * The kubelet's version check: the highest version offered must be below 2.0.0 (CSI 0.x and
 * 1.x); returns it, or throws saying why.
 */
export function highestSupportedVersion(versions: readonly string[]): string {
  if (versions.length === 0)
    throw new CsikitError(
      "CSIKIT_ERR_REGISTRATION",
      "CSI driver reporting empty array for supported versions",
    );
  let best: { text: string; parts: number[] } | undefined;
  for (const text of versions) {
    const parts = parseVersion(text);
    if (!parts) continue;
    if (!best || compareVersions(parts, best.parts) > 0) best = { text, parts };
  }
  if (!best) {
    throw new CsikitError(
      "CSIKIT_ERR_REGISTRATION",
      `none of the CSI versions reported by this driver are supported: ${JSON.stringify(versions)}`,
    );
  }
  if ((best.parts[0] ?? 0) >= 2) {
    throw new CsikitError(
      "CSIKIT_ERR_REGISTRATION",
      `highest supported version reported by driver is ${best.text}, must be v1.x`,
    );
  }
  return best.text;
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

export function validatePluginInfo(info: PluginInfo): void {
  if (info.type !== CSI_PLUGIN_TYPE) {
    throw new CsikitError("CSIKIT_ERR_REGISTRATION", `no handler registered for plugin type: ${info.type}`);
  }
  if (info.name === "") throw new CsikitError("CSIKIT_ERR_REGISTRATION", "plugin name is empty");
  highestSupportedVersion(info.supportedVersions);
}

export interface RegistrationHandlerOptions {
  drivers: DriverRegistry;
  nodeInfo: NodeInfoManager;
  logger: Logger;
}

export class RegistrationHandler implements PluginSocketHandler {
  readonly #options: RegistrationHandlerOptions;

  constructor(options: RegistrationHandlerOptions) {
    this.#options = options;
  }

  async added(socketPath: string, signal: AbortSignal): Promise<void> {
    const { drivers, logger } = this.#options;
    const registration = drivers.connect(socketPath);
    try {
      const info = await registration.registration.getInfo({}, { timeoutMs: GET_INFO_TIMEOUT_MS, signal });
      let error: string | undefined;
      try {
        validatePluginInfo(info);
        await this.#registerDriver(info, socketPath, signal);
        logger.info(2, "registered CSI driver", { driver: info.name, socket: socketPath });
      } catch (cause) {
        error = `RegisterPlugin error -- plugin registration failed with err: ${errorMessage(cause)}`;
        logger.error("CSI driver registration failed", { socket: socketPath, err: error });
      }
      try {
        await registration.registration.notifyRegistrationStatus(
          { pluginRegistered: error === undefined, error: error ?? "" },
          { timeoutMs: GET_INFO_TIMEOUT_MS, signal },
        );
      } catch (cause) {
        // As the kubelet: a driver registered before the status could be sent stays registered
        // (and known to the watcher), so its socket going away still deregisters it. Throwing here
        // would make the watcher forget the socket while the CSINode keeps the driver.
        if (error !== undefined) throw cause;
        logger.error("RegisterPlugin error -- failed to send registration status", {
          socket: socketPath,
          err: errorMessage(cause),
        });
      }
      if (error !== undefined) throw new CsikitError("CSIKIT_ERR_REGISTRATION", error);
    } finally {
      registration.close();
    }
  }

  async removed(socketPath: string, signal: AbortSignal): Promise<void> {
    const { drivers, nodeInfo, logger } = this.#options;
    const driver = drivers.bySocket(socketPath);
    if (!driver) return;
    drivers.remove(driver.name);
    await nodeInfo.uninstallDriver(driver.name, signal);
    logger.info(2, "deregistered CSI driver", { driver: driver.name, socket: socketPath });
  }

  async #registerDriver(info: PluginInfo, socketPath: string, signal: AbortSignal): Promise<void> {
    const { drivers, nodeInfo } = this.#options;
    const endpoint = info.endpoint === "" ? socketPath : info.endpoint;
    const client: CsiClient = drivers.connect(endpoint);
    let nodeInfoResponse;
    let capabilities: Set<string>;
    try {
      nodeInfoResponse = await client.node.nodeGetInfo({}, { signal });
      capabilities = await client.nodeCapabilities({ signal });
    } catch (error) {
      client.close();
      // The kubelet unregisters the driver (removing its entries) when NodeGetInfo fails.
      drivers.remove(info.name);
      await nodeInfo.uninstallDriver(info.name, signal).catch(() => undefined);
      throw new CsikitError(
        "CSIKIT_ERR_REGISTRATION",
        `error updating CSI node info: ${errorMessage(error)}`,
        {
          cause: error,
        },
      );
    }
    if (nodeInfoResponse.nodeId === "") {
      client.close();
      throw new CsikitError(
        "CSIKIT_ERR_REGISTRATION",
        `NodeGetInfo of driver ${info.name} returned an empty node_id`,
      );
    }
    await nodeInfo.installDriver(
      {
        driverName: info.name,
        nodeID: nodeInfoResponse.nodeId,
        maxVolumesPerNode: Number(nodeInfoResponse.maxVolumesPerNode || 0),
        topology: nodeInfoResponse.accessibleTopology?.segments ?? {},
      },
      signal,
    );
    drivers.add({ name: info.name, endpoint, socketPath, client, nodeCapabilities: capabilities });
  }
}
