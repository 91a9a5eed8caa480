// Test fixture for the provisioner (test/harness, because only tests may import
// the API server and the hostpath driver): the real embedded API server, a real driver on a Unix
// socket (`csikit hostpath`'s server, or a scripted stub where failures must be injected), the
// provisioner started in-process from real command-line flags, and helpers that play the PV
// controller's part (storage-provisioner annotation, binding, release) and the kubelet's
// (CSINode, Node labels). Everything is torn down through `defer`, also on failure, last
// registered first, so a temp dir goes only after the servers writing into it have stopped.

import { join } from "node:path";
import type { TestContext } from "node:test";
import {
  Flags,
  LOGGING_FLAGS,
  memoryLogger,
  parseFlags,
  silentLogger,
  type Logger,
} from "../../src/base/index.ts";
import {
  GVR,
  type CoreEvent,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
} from "../../src/api/index.ts";
import {
  FaultInjector,
  startApiServer,
  type ApiServerHandle,
  type AuditEvent,
} from "../../src/apiserver/index.ts";
import {
  CsiError,
  GrpcStatus,
  serveCsi,
  type CallContext,
  type CreateVolumeRequest,
  type CsiServer,
} from "../../src/csi/index.ts";
import { serveHostpathDriver, type HostpathServer } from "../../src/drivers/index.ts";
import { KubeClient, isNotFound, loadKubeConfig } from "../../src/kube/index.ts";
import {
  PROVISIONER_FLAGS,
  provisionerOptionsFromFlags,
  startProvisioner,
} from "../../src/sidecars/provisioner/index.ts";
import { until } from "./until.ts";
import { defer, tempDir } from "./cleanup.ts";

export const HOSTPATH = "hostpath.csi.k8s.io";
export const STUB = "stub.csi.csikit.io";

export interface Cluster {
  server: ApiServerHandle;
  faults: FaultInjector;
  kubeconfig: string;
  client: KubeClient;
  dir: string;
  /** Every authenticated request the server answered, in order (startCluster's; others: none). */
  audit?: AuditEvent[];
}

/** The API server without admission plugins (no pvc-protection: nothing here removes it). */
export async function startCluster(t: TestContext): Promise<Cluster> {
  const dir = await tempDir(t, "csikit-prov-");
  const controller = new AbortController();
  const faults = new FaultInjector();
  const audit: AuditEvent[] = [];
  const server = await startApiServer(
    {
      stateDir: join(dir, "apiserver"),
      port: 0,
      logger: silentLogger,
      faults,
      admission: [],
      audit: (event) => audit.push(event),
    },
    controller.signal,
  );
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
    qps: 1000,
    burst: 1000,
  });
  defer(t, async () => {
    client.close();
    controller.abort();
    await server.stopped;
  });
  return { server, faults, kubeconfig: server.kubeconfigPath, client, dir, audit };
}

export async function startHostpath(
  t: TestContext,
  dir: string,
  options: { nodeId?: string; node?: boolean; name?: string; driverName?: string } = {},
): Promise<HostpathServer> {
  const name = options.name ?? "hostpath";
  const driver = await serveHostpathDriver({
    endpoint: join(dir, `${name}.sock`),
    nodeId: options.nodeId ?? "node-1",
    stateDir: join(dir, `${name}-state`),
    vendorVersion: "0.0.0-test",
    nodeService: options.node ?? false,
    allowedPathRoots: [dir],
    shutdownGraceMs: 100,
    ...(options.driverName !== undefined && { driverName: options.driverName }),
  });
  defer(t, () => driver.close());
  return driver;
}

export interface StubVolume {
  id: string;
  name: string;
  capacity: number;
  contentSource?: CreateVolumeRequest["volumeContentSource"];
}

/** A scripted controller-only driver: records requests, holds volumes in memory. */
export interface Stub {
  server: CsiServer;
  volumes: Map<string, StubVolume>;
  creates: CreateVolumeRequest[];
  deletes: string[];
  /** Secrets each DeleteVolume carried. */
  deleteSecrets: Record<string, string>[];
  /** Runs before CreateVolume answers: throw a CsiError to fail, await to delay. */
  onCreate: ((request: CreateVolumeRequest, context: CallContext) => Promise<void>) | undefined;
  onDelete: ((volumeId: string) => Promise<void>) | undefined;
}

export async function startStub(
  t: TestContext,
  dir: string,
  options: { topology?: boolean; name?: string; accessibleTopology?: Record<string, string>[] } = {},
): Promise<Stub> {
  const stub: Omit<Stub, "server"> = {
    volumes: new Map(),
    creates: [],
    deletes: [],
    deleteSecrets: [],
    onCreate: undefined,
    onDelete: undefined,
  };
  const server = await serveCsi({
    endpoint: join(dir, `${options.name ?? "stub"}.sock`),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: STUB, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({
        capabilities: [
          { service: { type: "CONTROLLER_SERVICE" } },
          ...(options.topology ? [{ service: { type: "VOLUME_ACCESSIBILITY_CONSTRAINTS" as const } }] : []),
        ],
      }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: (["CREATE_DELETE_VOLUME", "CLONE_VOLUME", "CREATE_DELETE_SNAPSHOT"] as const).map(
          (type) => ({ rpc: { type } }),
        ),
      }),
      createVolume: async (request, context) => {
        stub.creates.push(request);
        // The backend makes the volume as soon as it is asked (what a timeout may hide).
        let volume = stub.volumes.get(request.name);
        if (!volume) {
          volume = {
            id: `stub-${request.name}`,
            name: request.name,
            capacity: Number(request.capacityRange?.requiredBytes ?? "0"),
            ...(request.volumeContentSource ? { contentSource: request.volumeContentSource } : {}),
          };
          stub.volumes.set(request.name, volume);
        }
        await stub.onCreate?.(request, context);
        return {
          volume: {
            volumeId: volume.id,
            capacityBytes: volume.capacity,
            volumeContext: { backend: "stub" },
            ...(volume.contentSource ? { contentSource: volume.contentSource } : {}),
            accessibleTopology: (options.accessibleTopology ?? []).map((segments) => ({ segments })),
          },
        };
      },
      deleteVolume: async (request) => {
        await stub.onDelete?.(request.volumeId);
        stub.deletes.push(request.volumeId);
        stub.deleteSecrets.push(request.secrets);
        for (const [name, volume] of stub.volumes)
          if (volume.id === request.volumeId) stub.volumes.delete(name);
        return {};
      },
    },
  });
  defer(t, () => server.close());
  return Object.assign(stub, { server });
}

/** Flags as a Deployment would pass them. */
export function provisionerFlags(argv: readonly string[]): Flags {
  return new Flags(parseFlags({ ...LOGGING_FLAGS, ...PROVISIONER_FLAGS }, argv));
}

export interface RunningProvisioner {
  stop(): Promise<void>;
  done: Promise<void>;
  logs: string[];
  url?: string;
}

export function runProvisioner(
  t: TestContext,
  cluster: Cluster,
  socket: string,
  argv: readonly string[] = [],
  extra: { env?: NodeJS.ProcessEnv; logger?: Logger } = {},
): RunningProvisioner {
  const { logger, lines } = memoryLogger({ verbosity: 5 });
  const flags = provisionerFlags([
    `--csi-address=${socket}`,
    `--kubeconfig=${cluster.kubeconfig}`,
    "--kube-api-qps=1000",
    "--kube-api-burst=1000",
    "--retry-interval-start=100ms",
    "--retry-interval-max=1s",
    ...argv,
  ]);
  const options = provisionerOptionsFromFlags(flags, extra.env ?? {});
  const controller = new AbortController();
  const running: RunningProvisioner = {
    logs: lines,
    done: Promise.resolve(),
    stop: async () => {
      controller.abort();
      await running.done.catch(() => undefined);
    },
  };
  running.done = startProvisioner(
    { ...options, logger: extra.logger ?? logger, onHttpEndpoint: (url) => (running.url = url) },
    controller.signal,
  );
  running.done.catch(() => undefined);
  defer(t, () => running.stop());
  return running;
}

export async function createClass(
  cluster: Cluster,
  name: string,
  driver: string,
  extra: Partial<StorageClass> = {},
): Promise<StorageClass> {
  return cluster.client.create<StorageClass>(GVR.storageClasses, {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name },
    provisioner: driver,
    ...extra,
  });
}

/** A claim as the PV controller leaves it for an external provisioner (annotation set). */
export async function createClaim(
  cluster: Cluster,
  name: string,
  driver: string,
  spec: Partial<NonNullable<PersistentVolumeClaim["spec"]>> = {},
  annotations: Record<string, string> = {},
  namespace = "default",
): Promise<PersistentVolumeClaim> {
  return cluster.client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name,
      namespace,
      annotations: { "volume.kubernetes.io/storage-provisioner": driver, ...annotations },
    },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "sc",
      ...spec,
    },
  });
}

export async function getClaim(
  cluster: Cluster,
  name: string,
  namespace = "default",
): Promise<PersistentVolumeClaim | undefined> {
  try {
    return await cluster.client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, name, { namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export async function getVolume(cluster: Cluster, name: string): Promise<PersistentVolume | undefined> {
  try {
    return await cluster.client.get<PersistentVolume>(GVR.persistentVolumes, name);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export function pvNameOf(claim: PersistentVolumeClaim): string {
  return `pvc-${claim.metadata?.uid}`;
}

/** Waits for the claim's PV (created by the provisioner). */
export function waitForVolume(
  cluster: Cluster,
  claim: PersistentVolumeClaim,
  timeoutMs?: number,
): Promise<PersistentVolume> {
  return until(() => getVolume(cluster, pvNameOf(claim)), `PV of claim ${claim.metadata?.name}`, {
    timeoutMs: timeoutMs,
  });
}

/** The PV controller's bind: claim.spec.volumeName + phases Bound. */
export async function bind(
  cluster: Cluster,
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
): Promise<void> {
  const fresh = (await getClaim(cluster, claim.metadata.name!, claim.metadata.namespace))!;
  fresh.spec = { ...fresh.spec, volumeName: pv.metadata.name! };
  const updated = await cluster.client.update(GVR.persistentVolumeClaims, fresh);
  await cluster.client.updateStatus(GVR.persistentVolumeClaims, { ...updated, status: { phase: "Bound" } });
  const freshPv = (await getVolume(cluster, pv.metadata.name!))!;
  await cluster.client.updateStatus(GVR.persistentVolumes, { ...freshPv, status: { phase: "Bound" } });
}

/** The PV controller's release: claim deleted, PV phase Released. */
export async function release(cluster: Cluster, claim: PersistentVolumeClaim, pvName: string): Promise<void> {
  await cluster.client.delete(GVR.persistentVolumeClaims, claim.metadata.name!, {
    namespace: claim.metadata.namespace!,
  });
  const pv = (await getVolume(cluster, pvName))!;
  await cluster.client.updateStatus(GVR.persistentVolumes, { ...pv, status: { phase: "Released" } });
}

export async function events(cluster: Cluster, namespace = "default"): Promise<CoreEvent[]> {
  const list = await cluster.client.list<CoreEvent>(GVR.events, { namespace });
  return list.items;
}

export { CsiError, GrpcStatus };

/** Resolves when the call's signal aborts (the client gave up or died). */
export function untilCancelled(context: CallContext): Promise<void> {
  return new Promise((resolve) => {
    if (context.signal.aborted) resolve();
    else context.signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
