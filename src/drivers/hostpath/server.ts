// Runs the hostpath driver: validates the configuration, loads (and repairs) the state, then
// serves Identity plus Controller and GroupController (controller service) and/or Node (node
// service) on one Unix socket until the signal aborts.
//
// One state dir per controller instance: controller.json/.journal have a single writer. Node
// instances (one per node ID) may share the dir with it: each writes only its own
// node-<hash>.json/.journal and reads the controller's files without taking them over.

import { mkdir } from "node:fs/promises";
import { serveCsi, type CsiServer } from "../../csi/index.ts";
import { whenAborted } from "../../base/index.ts";
import { controllerHandlers, finishVolumeDelete, type ControllerContext } from "./controller.ts";
import { DataLayout } from "./data.ts";
import { HostpathConfig, DEFAULT_ENDPOINT, type HostpathOptions } from "./driver.ts";
import { finishGroupDelete, groupControllerHandlers } from "./group-controller.ts";
import { identityHandlers } from "./identity.ts";
import { finishEphemeralDelete, nodeHandlers, type NodeContext } from "./node.ts";
import { Locks } from "./requests.ts";
import { finishSnapshotDelete } from "./snapshots.ts";
import { snapshotMetadataHandlers } from "./snapshot-metadata.ts";
import { controllerStore, fileVolumeSource, memoryVolumeSource, nodeStore } from "./state.ts";
import { mountProblem } from "./system.ts";
import { claimControllerState } from "./owner.ts";
import { resolveRoots } from "./paths.ts";

export interface HostpathServerOptions extends HostpathOptions {
  /** unix:///path, unix:path or /path. Default "unix:///csi/csi.sock" (upstream: unix://tmp/csi.sock). */
  endpoint?: string;
  /** Passed to the CSI server: how long close waits for in-flight calls (ms). Default 30000. */
  shutdownGraceMs?: number;
}

export interface HostpathServer {
  /** Absolute path of the socket. */
  readonly path: string;
  readonly config: HostpathConfig;
  /** Stops serving (in-flight calls finish first) and removes the socket. Idempotent. */
  close(): Promise<void>;
}

/** Finishes deletions a crash interrupted (creations finish when the CO retries them). */
async function repairController(context: ControllerContext): Promise<void> {
  const state = context.store.current;
  for (const group of Object.values(state.groupSnapshots))
    if (group.phase === "deleting") await finishGroupDelete(context, group);
  const snapshots = Object.values(context.store.current.snapshots).filter((s) => s.phase === "deleting");
  if (snapshots.length > 0) await finishSnapshotDelete(context, snapshots);
  for (const volume of Object.values(context.store.current.volumes))
    if (volume.phase === "deleting") await finishVolumeDelete(context, volume);
}

async function controllerSide(
  config: HostpathConfig,
  parts: { layout: DataLayout; locks: Locks; stores: Array<{ close(): Promise<void> }> },
): Promise<ControllerContext> {
  const store = controllerStore(config.stateDir);
  await store.load();
  parts.stores.push(store);
  const context = { config, store, layout: parts.layout, locks: parts.locks };
  await repairController(context);
  await store.compact();
  return context;
}

async function nodeSide(
  config: HostpathConfig,
  parts: {
    layout: DataLayout;
    controllerContext: ControllerContext | undefined;
    stores: Array<{ close(): Promise<void> }>;
  },
): Promise<NodeContext> {
  const store = nodeStore(config.stateDir, config.nodeId);
  await store.load();
  parts.stores.push(store);
  let probe: Promise<string | undefined> | undefined;
  const context: NodeContext = {
    config,
    layout: parts.layout,
    store,
    locks: new Locks(),
    allowedRoots: await resolveRoots(config.allowedPathRoots),
    volumes: parts.controllerContext
      ? memoryVolumeSource(parts.controllerContext.store)
      : fileVolumeSource(config.stateDir),
    mountProblem: () => (probe ??= mountProblem(config.stateDir)),
  };
  // Finish ephemeral deletions a crash interrupted (only possible where we may mount).
  for (const record of Object.values(store.current.ephemeral))
    if (record.phase === "deleting" && !(await context.mountProblem()))
      await finishEphemeralDelete(context, record.volumeId);
  await store.compact();
  return context;
}

/** Starts serving; resolves once the socket is listening. */
export async function serveHostpathDriver(
  options: HostpathServerOptions,
  signal?: AbortSignal,
): Promise<HostpathServer> {
  const config = new HostpathConfig(options);
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  const layout = new DataLayout(config.stateDir);
  const locks = new Locks();
  const logger = config.logger.with({ driver: config.driverName, node: config.nodeId });

  const release = config.controllerService
    ? await claimControllerState(config.stateDir)
    : (): Promise<void> => Promise.resolve();
  let server: CsiServer;
  const stores: Array<{ close(): Promise<void> }> = [];
  const closeStores = async (): Promise<void> => {
    for (const store of stores.splice(0)) await store.close();
  };
  try {
    const controllerContext = config.controllerService
      ? await controllerSide(config, { layout, locks, stores })
      : undefined;
    const nodeContext = config.nodeService
      ? await nodeSide(config, { layout, controllerContext, stores })
      : undefined;
    server = await serveCsi({
      endpoint: options.endpoint ?? DEFAULT_ENDPOINT,
      identity: identityHandlers(config, () => true),
      ...(controllerContext
        ? {
            controller: controllerHandlers(controllerContext),
            groupController: groupControllerHandlers(controllerContext),
            ...(config.enableSnapshotMetadata
              ? { snapshotMetadata: snapshotMetadataHandlers(controllerContext) }
              : {}),
          }
        : {}),
      ...(nodeContext ? { node: nodeHandlers(nodeContext) } : {}),
      logger,
      ...(signal ? { signal } : {}),
      ...(options.shutdownGraceMs !== undefined ? { shutdownGraceMs: options.shutdownGraceMs } : {}),
    });
  } catch (error) {
    await closeStores();
    await release();
    throw error;
  }
  logger.info(0, "hostpath driver serving", {
    endpoint: server.path,
    controllerService: config.controllerService,
    nodeService: config.nodeService,
    stateDir: config.stateDir,
  });
  let closing: Promise<void> | undefined;
  // The stores close after the last call finished (they compact their journals) and before
  // the state dir is released to a successor.
  const close = (): Promise<void> => (closing ??= server.close().then(closeStores).then(release));
  signal?.addEventListener("abort", () => void close(), { once: true });
  return { path: server.path, config, close };
}

/** Serves until `signal` aborts; resolves once fully stopped (socket closed and removed). */
export async function startHostpathDriver(
  options: HostpathServerOptions,
  signal: AbortSignal,
): Promise<void> {
  const server = await serveHostpathDriver(options, signal);
  await whenAborted(signal);
  await server.close();
}
