// Test fixture for the resizer (test/harness, because only tests may import the
// API server and the hostpath driver). It reuses the provisioner's fixture (the real embedded API
// server, `csikit hostpath`'s server, LIFO `defer`, bounded `waitFor`) and adds: the resizer
// started in-process from real command-line flags, a scripted CSI driver whose expansion and
// modification can be failed or held (for failure, recovery, failover and restart cases), and
// helpers that play the PV controller's part (a PV bound to a claim with a capacity).

import { join } from "node:path";
import type { TestContext } from "node:test";
import { Flags, LOGGING_FLAGS, memoryLogger, parseFlags, type Logger } from "../../src/base/index.ts";
import { GVR, type PersistentVolume, type PersistentVolumeClaim, type Pod } from "../../src/api/index.ts";
import {
  serveCsi,
  type CallContext,
  type ControllerExpandVolumeRequest,
  type ControllerModifyVolumeRequest,
  type CsiServer,
} from "../../src/csi/index.ts";
import { getClaim, type Cluster } from "./provisioner.ts";
import { RESIZER_FLAGS, resizerOptionsFromFlags, startResizer } from "../../src/sidecars/resizer/index.ts";
import { defer } from "./cleanup.ts";

export {
  CsiError,
  GrpcStatus,
  createClass,
  events,
  getClaim,
  getVolume,
  startCluster,
  startHostpath,
  untilCancelled,
  type Cluster,
} from "./provisioner.ts";

export const STUB = "resize-stub.csi.csikit.io";

export interface ResizeStub {
  server: CsiServer;
  /** Every ControllerExpandVolume request, in arrival order. */
  expands: ControllerExpandVolumeRequest[];
  modifies: ControllerModifyVolumeRequest[];
  /** Backend size of each volume (bytes): grows only when an expansion succeeds. */
  sizes: Map<string, number>;
  /** Answer of ControllerExpandVolume. Default true. */
  nodeExpansionRequired: boolean;
  /** Runs before ControllerExpandVolume acts: throw a CsiError to fail, await to hold. */
  onExpand: ((request: ControllerExpandVolumeRequest, context: CallContext) => Promise<void>) | undefined;
  onModify: ((request: ControllerModifyVolumeRequest) => Promise<void>) | undefined;
}

/**
 * A scripted controller driver, volumes in memory: controller EXPAND_VOLUME (unless nodeOnly or
 * noExpansion), node EXPAND_VOLUME (unless noExpansion) and MODIFY_VOLUME (unless noModify).
 */
export async function startResizeStub(
  t: TestContext,
  dir: string,
  options: {
    nodeOnly?: boolean;
    noExpansion?: boolean;
    noModify?: boolean;
    online?: boolean;
    name?: string;
    driverName?: string;
  } = {},
): Promise<ResizeStub> {
  const stub: Omit<ResizeStub, "server"> = {
    expands: [],
    modifies: [],
    sizes: new Map(),
    nodeExpansionRequired: true,
    onExpand: undefined,
    onModify: undefined,
  };
  const server = await serveCsi({
    endpoint: join(dir, `${options.name ?? "resize-stub"}.sock`),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: options.driverName ?? STUB, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({
        capabilities: [
          { service: { type: "CONTROLLER_SERVICE" } },
          { volumeExpansion: { type: options.online === false ? "OFFLINE" : "ONLINE" } },
        ],
      }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: [
          ...(options.nodeOnly || options.noExpansion ? [] : (["EXPAND_VOLUME"] as const)),
          ...(options.noModify ? [] : (["MODIFY_VOLUME"] as const)),
        ].map((type) => ({ rpc: { type } })),
      }),
      controllerExpandVolume: async (request, context) => {
        stub.expands.push(request);
        await stub.onExpand?.(request, context);
        const required = Number(request.capacityRange?.requiredBytes ?? "0");
        const size = Math.max(stub.sizes.get(request.volumeId) ?? 0, required);
        stub.sizes.set(request.volumeId, size);
        return { capacityBytes: size, nodeExpansionRequired: stub.nodeExpansionRequired };
      },
      controllerModifyVolume: async (request) => {
        stub.modifies.push(request);
        await stub.onModify?.(request);
        return {};
      },
    },
    node: {
      nodeGetCapabilities: async () => ({
        capabilities: options.noExpansion ? [] : [{ rpc: { type: "EXPAND_VOLUME" } }],
      }),
    },
  });
  defer(t, () => server.close());
  return Object.assign(stub, { server });
}

export function resizerFlags(argv: readonly string[]): Flags {
  return new Flags(parseFlags({ ...LOGGING_FLAGS, ...RESIZER_FLAGS }, argv));
}

export interface RunningResizer {
  stop(): Promise<void>;
  done: Promise<void>;
  logs: string[];
  url?: string;
}

export function runResizer(
  t: TestContext,
  cluster: Pick<Cluster, "kubeconfig">,
  socket: string,
  argv: readonly string[] = [],
  extra: { logger?: Logger } = {},
): RunningResizer {
  const { logger, lines } = memoryLogger({ verbosity: 5 });
  const options = resizerOptionsFromFlags(
    resizerFlags([
      `--csi-address=${socket}`,
      `--kubeconfig=${cluster.kubeconfig}`,
      "--kube-api-qps=1000",
      "--kube-api-burst=1000",
      "--retry-interval-start=100ms",
      "--retry-interval-max=2s",
      ...argv,
    ]),
  );
  const controller = new AbortController();
  const running: RunningResizer = {
    logs: lines,
    done: Promise.resolve(),
    stop: async () => {
      controller.abort();
      await running.done.catch(() => undefined);
    },
  };
  running.done = startResizer(
    { ...options, logger: extra.logger ?? logger, onHttpEndpoint: (url) => (running.url = url) },
    controller.signal,
  );
  running.done.catch(() => undefined);
  defer(t, () => running.stop());
  return running;
}

export interface BoundClaimOptions {
  name: string;
  driver: string;
  handle: string;
  /** PV capacity and claim status.capacity. Default "1Mi". */
  size?: string;
  namespace?: string;
  volumeAttributesClassName?: string;
  csi?: Partial<NonNullable<NonNullable<PersistentVolume["spec"]>["csi"]>>;
  volumeMode?: "Filesystem" | "Block";
}

/** A claim and its PV as the PV controller leaves them after binding (both Bound). */
export async function boundClaim(
  cluster: Pick<Cluster, "client">,
  options: BoundClaimOptions,
): Promise<{ claim: PersistentVolumeClaim; pv: PersistentVolume }> {
  const { client } = cluster;
  const namespace = options.namespace ?? "default";
  const size = options.size ?? "1Mi";
  const pvName = `pv-${options.name}`;
  const created = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: options.name, namespace },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: size } },
      storageClassName: "sc",
      volumeName: pvName,
      ...(options.volumeAttributesClassName
        ? { volumeAttributesClassName: options.volumeAttributesClassName }
        : {}),
      ...(options.volumeMode ? { volumeMode: options.volumeMode } : {}),
    },
  });
  const pv = await client.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: pvName },
    spec: {
      capacity: { storage: size },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: "sc",
      ...(options.volumeMode ? { volumeMode: options.volumeMode } : {}),
      claimRef: {
        kind: "PersistentVolumeClaim",
        apiVersion: "v1",
        namespace,
        name: options.name,
        uid: created.metadata.uid!,
      },
      csi: { driver: options.driver, volumeHandle: options.handle, fsType: "ext4", ...options.csi },
    },
  });
  await client.updateStatus(GVR.persistentVolumes, { ...pv, status: { phase: "Bound" } });
  const bound: PersistentVolumeClaim = {
    ...created,
    status: { phase: "Bound", accessModes: ["ReadWriteOnce"], capacity: { storage: size } },
  };
  const claim = await client.updateStatus(GVR.persistentVolumeClaims, bound);
  return { claim, pv };
}

/** The user edits the claim's request (kubectl edit / patch). */
export async function setRequest(
  cluster: Pick<Cluster, "client">,
  name: string,
  size: string,
  namespace = "default",
): Promise<void> {
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    name,
    { spec: { resources: { requests: { storage: size } } } },
    { namespace },
  );
}

export async function claimStatus(
  cluster: Cluster,
  name: string,
): Promise<NonNullable<PersistentVolumeClaim["status"]>> {
  return (await getClaim(cluster, name))?.status ?? {};
}

/** A running pod that uses the claim (what --handle-volume-inuse-error watches). */
export async function podUsing(
  cluster: Pick<Cluster, "client">,
  name: string,
  claimName: string,
): Promise<Pod> {
  return cluster.client.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      containers: [{ name: "c", image: "busybox" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
    },
  });
}

export const MI = 1024 * 1024;
