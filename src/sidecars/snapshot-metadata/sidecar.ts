// `csikit snapshot-metadata`: the external-snapshot-metadata sidecar's start-up, in upstream's
// order. Read the key pair; connect to the driver and learn its name (GetPluginInfo); build the
// Kubernetes client; listen on the TLS gRPC port at once (calls are answered UNAVAILABLE until
// the driver is validated); probe the driver until ready and require SNAPSHOT_METADATA_SERVICE
// among its plugin capabilities (else exit with an error, as upstream); then serve /health
// (200 "ok" once ready) and the metrics on --http-endpoint. Resolves once everything has
// stopped after `signal` aborts.

import { readFile } from "node:fs/promises";
import { CsikitError, errorMessage, silentLogger, whenAborted } from "../../base/index.ts";
import { CsiClient, serveSnapshotMetadataApi, type TlsGrpcServer } from "../../csi/index.ts";
import {
  Registry,
  collectDefaultMetrics,
  kubeClientFromOptions,
  startHttpEndpoint,
  type HttpEndpoint,
  type KubeClient,
} from "../../kube/index.ts";
import { SnapshotMetadataMetrics } from "./metrics.ts";
import type { SnapshotMetadataOptions } from "./options.ts";
import { snapshotMetadataService } from "./service.ts";

/** The /health path upstream serves beside the metrics (v1.0+). */
export const HEALTH_PATH = "/health";

async function readKeyPair(options: SnapshotMetadataOptions): Promise<{ certPem: Buffer; keyPem: Buffer }> {
  try {
    return { certPem: await readFile(options.tlsCertFile), keyPem: await readFile(options.tlsKeyFile) };
  } catch (error) {
    throw new CsikitError("CSIKIT_ERR_TLS", `cannot read the TLS key pair: ${errorMessage(error)}`);
  }
}

export async function runSnapshotMetadata(
  options: SnapshotMetadataOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = options.logger ?? silentLogger;
  const keyPair = await readKeyPair(options);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = new SnapshotMetadataMetrics(registry);
  const csi = CsiClient.connect(options.csiAddress, {
    logger,
    timeoutMs: options.timeoutMs,
    onCall: metrics.observer(),
  });
  let client: KubeClient | undefined;
  let server: TlsGrpcServer | undefined;
  let endpoint: HttpEndpoint | undefined;
  try {
    await csi.waitForConnection({ signal });
    const driverName = (await csi.identity.getPluginInfo({}, { signal })).name;
    if (driverName === "")
      throw new CsikitError("CSIKIT_ERR_DRIVER", "error getting CSI driver name: empty name");
    logger.info(0, "CSI driver name", { driver: driverName });
    metrics.setDriverName(driverName);
    client = kubeClientFromOptions({
      kubeconfig: options.kubeconfig,
      master: "",
      kubeApiQps: options.kubeApiQps,
      kubeApiBurst: options.kubeApiBurst,
      userAgent: "csi-snapshot-metadata",
      ...(options.clock ? { clock: options.clock } : {}),
    });
    let ready = false;
    server = await serveSnapshotMetadataApi({
      host: options.bindAddress === "" ? "0.0.0.0" : options.bindAddress,
      port: options.port,
      certPem: keyPair.certPem,
      keyPem: keyPair.keyPem,
      tls: options.tls,
      logger,
      service: snapshotMetadataService({
        client,
        csi,
        driverName,
        audience: options.audience,
        maxStreamingDurationMs: options.maxStreamingDurationMs,
        driverReady: () => ready,
        metrics,
        logger,
      }),
    });
    logger.info(0, "GRPC server started listening", { port: server.port });
    options.onListening?.(server.port);
    await csi.waitForReady({ signal });
    const capabilities = await csi.pluginCapabilities({ signal });
    if (!capabilities.has("SNAPSHOT_METADATA_SERVICE"))
      throw new CsikitError(
        "CSIKIT_ERR_DRIVER",
        `CSI driver ${driverName} does not support the SNAPSHOT_METADATA_SERVICE`,
      );
    ready = true;
    if (options.httpEndpoint !== "") {
      endpoint = await startHttpEndpoint(
        {
          address: options.httpEndpoint,
          metricsPath: options.metricsPath,
          ...(options.disableMetrics ? {} : { registry }),
          routes: {
            [HEALTH_PATH]: async () =>
              ready ? { status: 200, body: "ok" } : { status: 503, body: "not ready" },
          },
          logger,
        },
        signal,
      );
      logger.info(0, "HTTP server listening", {
        address: options.httpEndpoint,
        health: HEALTH_PATH,
        metrics: !options.disableMetrics,
      });
      options.onHttpEndpoint?.(endpoint.url);
    }
    await whenAborted(signal);
  } finally {
    await server?.close();
    await endpoint?.stopped;
    csi.close();
    client?.close();
  }
}
