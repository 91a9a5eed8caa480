// Test fixture for the attacher (test/harness: tests may import the API server and the hostpath
// driver; components may not): the real embedded API server and a real driver on a
// Unix socket — hostpath's server, or a scripted controller where failures must be injected —
// the attacher started in-process from real command-line flags, and builders for what the
// attacher reads (CSINode, PV, VolumeAttachment as the attach/detach controller creates it).
// Cleanups go through the provisioner fixture's `defer` (last registered first, also on failure).

import type { TestContext } from "node:test";
import { join } from "node:path";
import { Flags, LOGGING_FLAGS, memoryLogger, parseFlags } from "../../src/base/index.ts";
import {
  GVR,
  type CSINode,
  type PersistentVolume,
  type PersistentVolumeSpec,
  type VolumeAttachment,
} from "../../src/api/index.ts";
import {
  CsiError,
  GrpcStatus,
  serveCsi,
  type CallContext,
  type ControllerPublishVolumeRequest,
  type ControllerServiceCapability_RPC_Type,
  type ControllerUnpublishVolumeRequest,
  type CsiServer,
} from "../../src/csi/index.ts";
import { isNotFound, type KubeClient } from "../../src/kube/index.ts";
import { type Cluster } from "./provisioner.ts";
import {
  ATTACHER_FLAGS,
  attacherOptionsFromFlags,
  startAttacher,
  type AttacherHandle,
} from "../../src/sidecars/attacher/index.ts";
import { defer } from "./cleanup.ts";

export { startCluster, startHostpath, type Cluster } from "./provisioner.ts";
export { CsiError, GrpcStatus };

export const HOSTPATH = "hostpath.csi.k8s.io";
export const SCRIPTED = "scripted.attacher.csikit.io";

export interface RunningAttacher extends AttacherHandle {
  logs: string[];
  url?: string;
}

/** The attacher from flags as a Deployment passes them, fast retries, stopped after the test. */
export function runAttacher(
  t: TestContext,
  cluster: Cluster,
  socket: string,
  argv: readonly string[] = [],
): RunningAttacher {
  const { logger, lines } = memoryLogger({ verbosity: 5 });
  const flags = new Flags(
    parseFlags({ ...LOGGING_FLAGS, ...ATTACHER_FLAGS }, [
      `--csi-address=${socket}`,
      `--kubeconfig=${cluster.kubeconfig}`,
      "--kube-api-qps=1000",
      "--kube-api-burst=1000",
      "--retry-interval-start=100ms",
      "--retry-interval-max=1s",
      ...argv,
    ]),
  );
  const running: RunningAttacher = Object.assign(
    startAttacher({
      ...attacherOptionsFromFlags(flags),
      logger,
      onHttpEndpoint: (url) => (running.url = url),
    }),
    { logs: lines },
  );
  defer(t, () => running.close());
  return running;
}

/** The kubelet's CSINode for `nodeName`, mapping `driver` to `nodeId`. */
export async function createCsiNode(
  client: KubeClient,
  nodeName: string,
  drivers: Record<string, string>,
): Promise<CSINode> {
  return client.create<CSINode>(GVR.csiNodes, {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSINode",
    metadata: { name: nodeName },
    spec: { drivers: Object.entries(drivers).map(([name, nodeID]) => ({ name, nodeID, topologyKeys: [] })) },
  });
}

export async function createVolume(
  client: KubeClient,
  name: string,
  driver: string,
  handle: string,
  spec: Partial<PersistentVolumeSpec> = {},
): Promise<PersistentVolume> {
  const { csi, ...rest } = spec;
  return client.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      ...rest,
      csi: { driver, volumeHandle: handle, ...csi },
    },
  });
}

/** A VolumeAttachment as the attach/detach controller creates it. */
export async function createAttachment(
  client: KubeClient,
  name: string,
  options: { driver: string; nodeName: string; pvName?: string; inline?: PersistentVolumeSpec },
): Promise<VolumeAttachment> {
  return client.create<VolumeAttachment>(GVR.volumeAttachments, {
    apiVersion: "storage.k8s.io/v1",
    kind: "VolumeAttachment",
    metadata: { name },
    spec: {
      attacher: options.driver,
      nodeName: options.nodeName,
      source: options.inline
        ? { inlineVolumeSpec: options.inline }
        : { persistentVolumeName: options.pvName! },
    },
  });
}

export async function getAttachment(client: KubeClient, name: string): Promise<VolumeAttachment | undefined> {
  try {
    return await client.get<VolumeAttachment>(GVR.volumeAttachments, name);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export async function getVolume(client: KubeClient, name: string): Promise<PersistentVolume | undefined> {
  try {
    return await client.get<PersistentVolume>(GVR.persistentVolumes, name);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** A scripted controller-only driver: records Publish/Unpublish, answers from `published`. */
export interface ScriptedDriver {
  server: CsiServer;
  path: string;
  publishes: ControllerPublishVolumeRequest[];
  unpublishes: ControllerUnpublishVolumeRequest[];
  /** volume ID → node IDs it is published to (what ListVolumes reports). */
  published: Map<string, Set<string>>;
  /** Runs before Publish answers: throw a CsiError to fail, await to hang. */
  onPublish: ((request: ControllerPublishVolumeRequest, context: CallContext) => Promise<void>) | undefined;
  onUnpublish:
    ((request: ControllerUnpublishVolumeRequest, context: CallContext) => Promise<void>) | undefined;
  /** Pages ListVolumes requested (max_entries of each). */
  listPages: number[];
}

export async function startScripted(
  t: TestContext,
  dir: string,
  options: { capabilities?: ControllerServiceCapability_RPC_Type[]; controllerService?: boolean } = {},
): Promise<ScriptedDriver> {
  const capabilities = options.capabilities ?? [
    "PUBLISH_UNPUBLISH_VOLUME",
    "LIST_VOLUMES",
    "LIST_VOLUMES_PUBLISHED_NODES",
  ];
  const driver: Omit<ScriptedDriver, "server" | "path"> = {
    publishes: [],
    unpublishes: [],
    published: new Map(),
    onPublish: undefined,
    onUnpublish: undefined,
    listPages: [],
  };
  const server = await serveCsi({
    endpoint: join(dir, "scripted.sock"),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: SCRIPTED, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({
        capabilities:
          options.controllerService === false ? [] : [{ service: { type: "CONTROLLER_SERVICE" } }],
      }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: capabilities.map((type) => ({ rpc: { type } })),
      }),
      controllerPublishVolume: async (request, context) => {
        driver.publishes.push(request);
        await driver.onPublish?.(request, context);
        const nodes = driver.published.get(request.volumeId) ?? new Set<string>();
        nodes.add(request.nodeId);
        driver.published.set(request.volumeId, nodes);
        return { publishContext: { device: `/dev/scripted/${request.volumeId}` } };
      },
      controllerUnpublishVolume: async (request, context) => {
        driver.unpublishes.push(request);
        await driver.onUnpublish?.(request, context);
        driver.published.get(request.volumeId)?.delete(request.nodeId);
        return {};
      },
      listVolumes: async (request) => {
        driver.listPages.push(request.maxEntries);
        const ids = [...driver.published.keys()].sort();
        const start = request.startingToken === "" ? 0 : Number(request.startingToken);
        if (!Number.isInteger(start) || start < 0 || start > ids.length)
          throw new CsiError(GrpcStatus.ABORTED, `bad starting_token ${request.startingToken}`);
        const end = request.maxEntries > 0 ? Math.min(ids.length, start + request.maxEntries) : ids.length;
        return {
          entries: ids.slice(start, end).map((volumeId) => ({
            volume: { volumeId, capacityBytes: "0" },
            status: { publishedNodeIds: [...driver.published.get(volumeId)!] },
          })),
          nextToken: end < ids.length ? String(end) : "",
        };
      },
    },
  });
  defer(t, () => server.close());
  return Object.assign(driver, { server, path: server.path });
}
