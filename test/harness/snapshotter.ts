// Test fixture for the csi-snapshotter sidecar: the sidecar started in-process from real
// command-line flags or as a real child process (kill -9 tests), a scripted CSI driver whose
// snapshot calls can fail, hang or answer "not ready", builders for the objects the sidecar
// reads (classes, a bound claim and its PV), and a TEST STAND-IN for the snapshot-controller.
//
// UPSTREAM-BEHAVING STAND-IN: `startSnapshotControllerStandIn` plays external-snapshotter's
// common snapshot-controller (v8.6) only as far as the sidecar's contract goes, so the sidecar
// is proven against what upstream's controller writes: for a dynamic VolumeSnapshot it creates
// `snapcontent-<VS UID>` (volumeSnapshotRef with the UID, source.volumeHandle of the claim's
// PV, class, deletionPolicy of the class, driver, sourceVolumeMode, the bound-protection
// finalizer, the deletion-secret annotations resolved from the class's snapshotter-secret
// templates, and with distributed snapshotting the managed-by label of the volume's node); it
// binds the snapshot's status; when the snapshot is deleted it sets the being-deleted
// annotation and deletes the content (Delete) and drops the snapshot's finalizer once the
// content is gone (or at once with Retain). Group snapshots alike (`groupsnapcontent-<UID>`,
// the claims picked by the label selector). It polls every 50 ms instead of watching. The real
// snapshot-controller is src/controllers/snapshot/; the end-to-end tests use it.

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { Flags, LOGGING_FLAGS, errorMessage, memoryLogger, parseFlags } from "../../src/base/index.ts";
import {
  GVR,
  labelSelectorMatches,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeGroupSnapshot,
  type VolumeGroupSnapshotClass,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
} from "../../src/api/index.ts";
import {
  CsiError,
  GrpcStatus,
  serveCsi,
  type CallContext,
  type CreateSnapshotRequest,
  type CsiServer,
  type SnapshotInput,
} from "../../src/csi/index.ts";
import { isNotFound, type KubeClient } from "../../src/kube/index.ts";
import {
  MANAGED_BY_LABEL,
  SNAPSHOTTER_FLAGS,
  SNAPSHOT_ANNOTATIONS,
  SNAPSHOT_FINALIZERS,
  snapshotSecretReference,
  snapshotterOptionsFromFlags,
  startSnapshotter,
  type SnapshotterHandle,
} from "../../src/sidecars/snapshotter/index.ts";
import { defer } from "./cleanup.ts";
import type { Cluster } from "./provisioner.ts";

export { startCluster, startHostpath, type Cluster } from "./provisioner.ts";
export { CsiError, GrpcStatus };

export const HOSTPATH = "hostpath.csi.k8s.io";
export const SCRIPTED = "scripted.snapshotter.csikit.io";
export const NS = "default";
const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const VS_BOUND_FINALIZER = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection";
const VGS_BOUND_FINALIZER = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-bound-protection";

/** Flags every test run passes: fast retries, no client-side throttling. */
const TEST_ARGS = [
  "--kube-api-qps=1000",
  "--kube-api-burst=1000",
  "--retry-interval-start=100ms",
  "--retry-interval-max=1s",
];

export interface RunningSnapshotter extends SnapshotterHandle {
  logs: string[];
  url?: string;
}

/** The sidecar in-process from flags as a Deployment passes them, stopped after the test. */
export function runSnapshotter(
  t: TestContext,
  cluster: Pick<Cluster, "kubeconfig">,
  socket: string,
  argv: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): RunningSnapshotter {
  const { logger, lines } = memoryLogger({ verbosity: 5 });
  const flags = new Flags(
    parseFlags({ ...LOGGING_FLAGS, ...SNAPSHOTTER_FLAGS }, [
      `--csi-address=${socket}`,
      `--kubeconfig=${cluster.kubeconfig}`,
      ...TEST_ARGS,
      ...argv,
    ]),
  );
  const running: RunningSnapshotter = Object.assign(
    startSnapshotter({
      ...snapshotterOptionsFromFlags(flags, env),
      logger,
      onHttpEndpoint: (url) => (running.url = url),
    }),
    { logs: lines },
  );
  defer(t, () => running.close());
  return running;
}

export interface SnapshotterChild {
  process: ChildProcess;
  stderr: string[];
  /** SIGKILL and wait for the exit (idempotent). */
  kill(): Promise<void>;
}

/** `csikit snapshotter` as a real process (kill -9 tests), killed after the test at the latest. */
export function startSnapshotterChild(
  t: TestContext,
  kubeconfig: string,
  socket: string,
  argv: readonly string[] = [],
): SnapshotterChild {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      "snapshotter",
      `--csi-address=${socket}`,
      `--kubeconfig=${kubeconfig}`,
      ...TEST_ARGS,
      "-v=4",
      ...argv,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const stderr: string[] = [];
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  defer(t, kill);
  return { process: child, stderr, kill };
}

export async function createSnapshotClass(
  client: KubeClient,
  name: string,
  options: { driver: string; deletionPolicy?: "Delete" | "Retain"; parameters?: Record<string, string> },
): Promise<VolumeSnapshotClass> {
  return client.create<VolumeSnapshotClass>(GVR.volumeSnapshotClasses, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotClass",
    metadata: { name },
    driver: options.driver,
    deletionPolicy: options.deletionPolicy ?? "Delete",
    ...(options.parameters ? { parameters: options.parameters } : {}),
  });
}

export async function createGroupSnapshotClass(
  client: KubeClient,
  name: string,
  options: { driver: string; deletionPolicy?: "Delete" | "Retain"; parameters?: Record<string, string> },
): Promise<VolumeGroupSnapshotClass> {
  return client.create<VolumeGroupSnapshotClass>(GVR.volumeGroupSnapshotClasses, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshotClass",
    metadata: { name },
    driver: options.driver,
    deletionPolicy: options.deletionPolicy ?? "Delete",
    ...(options.parameters ? { parameters: options.parameters } : {}),
  });
}

/** A PV for `volumeHandle` and a claim bound to it, as the PV controller leaves them. */
export async function createBoundClaim(
  client: KubeClient,
  name: string,
  options: { driver: string; volumeHandle: string; node?: string; labels?: Record<string, string> },
): Promise<void> {
  const pvName = `pv-${name}`;
  const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NS, ...(options.labels ? { labels: options.labels } : {}) },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      volumeName: pvName,
      storageClassName: "",
    },
  });
  await client.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: pvName },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: "",
      csi: { driver: options.driver, volumeHandle: options.volumeHandle },
      claimRef: {
        kind: "PersistentVolumeClaim",
        apiVersion: "v1",
        namespace: NS,
        name,
        uid: claim.metadata.uid!,
      },
      ...(options.node
        ? {
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      { key: "kubernetes.io/hostname", operator: "In", values: [options.node] },
                    ],
                  },
                ],
              },
            },
          }
        : {}),
    },
  });
  await client.updateStatus(GVR.persistentVolumeClaims, { ...claim, status: { phase: "Bound" } });
}

export async function createVolumeSnapshot(
  client: KubeClient,
  name: string,
  options: { claim: string; className: string },
): Promise<VolumeSnapshot> {
  return client.create<VolumeSnapshot>(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name, namespace: NS },
    spec: {
      source: { persistentVolumeClaimName: options.claim },
      volumeSnapshotClassName: options.className,
    },
  });
}

export async function getOrUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The content the stand-in created for a snapshot (snapcontent-<uid>), if any. */
export async function contentOf(
  client: KubeClient,
  snapshotName: string,
): Promise<VolumeSnapshotContent | undefined> {
  const vs = await getOrUndefined(() =>
    client.get<VolumeSnapshot>(GVR.volumeSnapshots, snapshotName, { namespace: NS }),
  );
  if (!vs) return undefined;
  return getOrUndefined(() =>
    client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, `snapcontent-${vs.metadata.uid}`),
  );
}

// ---------------------------------------------------------------------------------------------
// The scripted driver

export interface ScriptedSnapshot {
  id: string;
  name: string;
  sourceVolumeId: string;
  sizeBytes: number;
  readyToUse: boolean;
  creationSeconds: number;
}

export interface ScriptedSnapshotDriver {
  server: CsiServer;
  path: string;
  /** The backend: snapshot ID → snapshot. */
  snapshots: Map<string, ScriptedSnapshot>;
  creates: CreateSnapshotRequest[];
  deletes: { snapshotId: string; secrets: Record<string, string> }[];
  lists: { snapshotId: string; secrets: Record<string, string> }[];
  /** Runs before CreateSnapshot answers: throw a CsiError to fail, await to hang. */
  onCreate: ((request: CreateSnapshotRequest, context: CallContext) => Promise<void>) | undefined;
  onDelete: ((snapshotId: string) => Promise<void>) | undefined;
  /** CreateSnapshot / ListSnapshots answer readyToUse=false while this says so. */
  ready: (snapshot: ScriptedSnapshot) => boolean;
}

function snapshotMessage(snapshot: ScriptedSnapshot, ready: boolean): SnapshotInput {
  return {
    snapshotId: snapshot.id,
    sourceVolumeId: snapshot.sourceVolumeId,
    sizeBytes: snapshot.sizeBytes,
    creationTime: { seconds: snapshot.creationSeconds, nanos: 500 },
    readyToUse: ready,
  };
}

/** A controller-only driver with CREATE_DELETE_SNAPSHOT and LIST_SNAPSHOTS; IDs from names. */
export async function startScriptedSnapshots(
  t: TestContext,
  dir: string,
  options: { listSnapshots?: boolean } = {},
): Promise<ScriptedSnapshotDriver> {
  const driver: Omit<ScriptedSnapshotDriver, "server" | "path"> = {
    snapshots: new Map(),
    creates: [],
    deletes: [],
    lists: [],
    onCreate: undefined,
    onDelete: undefined,
    ready: () => true,
  };
  const server = await serveCsi({
    endpoint: join(dir, "scripted-snap.sock"),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: SCRIPTED, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }] }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: [
          { rpc: { type: "CREATE_DELETE_SNAPSHOT" } },
          ...(options.listSnapshots === false ? [] : [{ rpc: { type: "LIST_SNAPSHOTS" as const } }]),
        ],
      }),
      createSnapshot: async (request, context) => {
        driver.creates.push(request);
        await driver.onCreate?.(request, context);
        const id = `snap-${request.name}`;
        let snapshot = driver.snapshots.get(id);
        if (!snapshot) {
          snapshot = {
            id,
            name: request.name,
            sourceVolumeId: request.sourceVolumeId,
            sizeBytes: 1048576,
            readyToUse: true,
            creationSeconds: 1_700_000_000,
          };
          driver.snapshots.set(id, snapshot);
        }
        return { snapshot: snapshotMessage(snapshot, driver.ready(snapshot)) };
      },
      deleteSnapshot: async (request) => {
        driver.deletes.push({ snapshotId: request.snapshotId, secrets: request.secrets });
        await driver.onDelete?.(request.snapshotId);
        driver.snapshots.delete(request.snapshotId);
        return {};
      },
      listSnapshots: async (request) => {
        driver.lists.push({ snapshotId: request.snapshotId, secrets: request.secrets });
        const found = driver.snapshots.get(request.snapshotId);
        if (request.snapshotId !== "" && !found) return { entries: [] };
        const all = found ? [found] : [...driver.snapshots.values()];
        return {
          entries: all.map((snapshot) => ({ snapshot: snapshotMessage(snapshot, driver.ready(snapshot)) })),
        };
      },
    },
  });
  defer(t, () => server.close());
  return Object.assign(driver, { server, path: server.path });
}

// ---------------------------------------------------------------------------------------------
// The stand-in snapshot-controller

export interface SnapshotControllerStandIn {
  stop(): Promise<void>;
  /** Errors a pass met (each retried on the next pass); for diagnostics. */
  errors: string[];
}

function loop(pass: (signal: AbortSignal) => Promise<void>): SnapshotControllerStandIn {
  const controller = new AbortController();
  const errors: string[] = [];
  const done = (async () => {
    while (!controller.signal.aborted) {
      try {
        await pass(controller.signal);
      } catch (error) {
        if (!controller.signal.aborted) errors.push(errorMessage(error));
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    errors,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

function nodeOfVolume(pv: PersistentVolume): string | undefined {
  for (const term of pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [])
    for (const expression of term.matchExpressions ?? [])
      if (expression.key === "kubernetes.io/hostname" && expression.values?.[0]) return expression.values[0];
  return undefined;
}

async function claimVolume(
  client: KubeClient,
  namespace: string,
  claimName: string,
): Promise<PersistentVolume> {
  const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, claimName, { namespace });
  if (!claim.spec?.volumeName) throw new Error(`claim ${namespace}/${claimName} is not bound`);
  return client.get<PersistentVolume>(GVR.persistentVolumes, claim.spec.volumeName);
}

function secretAnnotations(
  reference: { name?: string; namespace?: string } | undefined,
  keys: { name: string; namespace: string },
): Record<string, string> {
  return reference?.name ? { [keys.name]: reference.name, [keys.namespace]: reference.namespace ?? "" } : {};
}

async function removeFinalizer(
  client: KubeClient,
  gvr: typeof GVR.volumeSnapshots,
  object: {
    metadata: { name?: string; namespace?: string; finalizers?: string[]; resourceVersion?: string };
  },
  finalizer: string,
): Promise<void> {
  const finalizers = object.metadata.finalizers ?? [];
  if (!finalizers.includes(finalizer)) return;
  await client.patch(
    gvr,
    object.metadata.name!,
    {
      metadata: {
        resourceVersion: object.metadata.resourceVersion,
        finalizers: finalizers.filter((f) => f !== finalizer),
      },
    },
    { type: "merge", ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}) },
  );
}

async function syncSnapshot(client: KubeClient, vs: VolumeSnapshot, distributed: boolean): Promise<void> {
  const namespace = vs.metadata.namespace!;
  const contentName = `snapcontent-${vs.metadata.uid}`;
  const content = await getOrUndefined(() =>
    client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, contentName),
  );
  if (vs.metadata.deletionTimestamp) {
    if (content && content.spec.deletionPolicy === "Delete") {
      if (content.metadata.annotations?.[SNAPSHOT_ANNOTATIONS.beingDeleted] === undefined)
        await client.patch(
          GVR.volumeSnapshotContents,
          contentName,
          { metadata: { annotations: { [SNAPSHOT_ANNOTATIONS.beingDeleted]: "yes" } } },
          { type: "merge" },
        );
      if (!content.metadata.deletionTimestamp) await client.delete(GVR.volumeSnapshotContents, contentName);
      return;
    }
    await removeFinalizer(client, GVR.volumeSnapshots, vs, VS_BOUND_FINALIZER);
    return;
  }
  const claimName = vs.spec.source.persistentVolumeClaimName;
  if (!claimName) return;
  if (!content) {
    const className = vs.spec.volumeSnapshotClassName!;
    const snapshotClass = await client.get<VolumeSnapshotClass>(GVR.volumeSnapshotClasses, className);
    const pv = await claimVolume(client, namespace, claimName);
    const reference = snapshotSecretReference("Snapshotter", snapshotClass.parameters, {
      contentName,
      snapshot: { name: vs.metadata.name!, namespace },
    });
    const node = distributed ? nodeOfVolume(pv) : undefined;
    await client.create<VolumeSnapshotContent>(GVR.volumeSnapshotContents, {
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshotContent",
      metadata: {
        name: contentName,
        finalizers: [SNAPSHOT_FINALIZERS.content],
        annotations: secretAnnotations(reference, {
          name: SNAPSHOT_ANNOTATIONS.deletionSecretName,
          namespace: SNAPSHOT_ANNOTATIONS.deletionSecretNamespace,
        }),
        ...(node ? { labels: { [MANAGED_BY_LABEL]: node } } : {}),
      },
      spec: {
        volumeSnapshotRef: {
          kind: "VolumeSnapshot",
          apiVersion: "snapshot.storage.k8s.io/v1",
          namespace,
          name: vs.metadata.name!,
          uid: vs.metadata.uid!,
          resourceVersion: vs.metadata.resourceVersion!,
        },
        source: { volumeHandle: pv.spec!.csi!.volumeHandle },
        volumeSnapshotClassName: className,
        deletionPolicy: snapshotClass.deletionPolicy,
        driver: snapshotClass.driver,
        sourceVolumeMode: pv.spec?.volumeMode ?? "Filesystem",
      },
    });
  }
  if (!(vs.metadata.finalizers ?? []).includes(VS_BOUND_FINALIZER))
    await client.patch(
      GVR.volumeSnapshots,
      vs.metadata.name!,
      {
        metadata: {
          resourceVersion: vs.metadata.resourceVersion,
          finalizers: [...(vs.metadata.finalizers ?? []), VS_BOUND_FINALIZER],
        },
      },
      { type: "merge", namespace },
    );
  const fresh = content ?? (await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, contentName));
  const ready = fresh.status?.readyToUse === true;
  if (vs.status?.boundVolumeSnapshotContentName !== contentName || (vs.status?.readyToUse ?? false) !== ready)
    await client.patch(
      GVR.volumeSnapshots,
      vs.metadata.name!,
      { status: { boundVolumeSnapshotContentName: contentName, readyToUse: ready } },
      { type: "merge", namespace, subresource: "status" },
    );
}

/** A content deleted while its snapshot is gone: the controller's being-deleted annotation. */
async function syncOrphanContents(client: KubeClient): Promise<void> {
  const contents = await client.list<VolumeSnapshotContent>(GVR.volumeSnapshotContents);
  for (const content of contents.items) {
    if (!content.metadata.deletionTimestamp) continue;
    if (content.metadata.annotations?.[SNAPSHOT_ANNOTATIONS.beingDeleted] !== undefined) continue;
    const ref = content.spec.volumeSnapshotRef;
    const vs = ref?.name
      ? await getOrUndefined(() =>
          client.get<VolumeSnapshot>(GVR.volumeSnapshots, ref.name!, { namespace: ref.namespace! }),
        )
      : undefined;
    if (vs && vs.metadata.uid === ref?.uid && !vs.metadata.deletionTimestamp) continue;
    await client.patch(
      GVR.volumeSnapshotContents,
      content.metadata.name!,
      { metadata: { annotations: { [SNAPSHOT_ANNOTATIONS.beingDeleted]: "yes" } } },
      { type: "merge" },
    );
  }
}

async function syncGroupSnapshot(client: KubeClient, vgs: VolumeGroupSnapshot): Promise<void> {
  const namespace = vgs.metadata.namespace!;
  const contentName = `groupsnapcontent-${vgs.metadata.uid}`;
  const content = await getOrUndefined(() =>
    client.get<VolumeGroupSnapshotContent>(GVR.volumeGroupSnapshotContents, contentName),
  );
  if (vgs.metadata.deletionTimestamp) {
    if (content && content.spec.deletionPolicy === "Delete") {
      if (content.metadata.annotations?.[SNAPSHOT_ANNOTATIONS.groupBeingDeleted] === undefined)
        await client.patch(
          GVR.volumeGroupSnapshotContents,
          contentName,
          { metadata: { annotations: { [SNAPSHOT_ANNOTATIONS.groupBeingDeleted]: "yes" } } },
          { type: "merge" },
        );
      if (!content.metadata.deletionTimestamp)
        await client.delete(GVR.volumeGroupSnapshotContents, contentName);
      return;
    }
    await removeFinalizer(client, GVR.volumeGroupSnapshots, vgs, VGS_BOUND_FINALIZER);
    return;
  }
  const selector = vgs.spec.source.selector;
  if (!selector) return;
  if (!content) {
    const className = vgs.spec.volumeGroupSnapshotClassName!;
    const groupClass = await client.get<VolumeGroupSnapshotClass>(GVR.volumeGroupSnapshotClasses, className);
    const claims = await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, { namespace });
    const handles: string[] = [];
    for (const claim of claims.items) {
      if (!labelSelectorMatches(selector, claim.metadata.labels ?? {})) continue;
      handles.push((await claimVolume(client, namespace, claim.metadata.name!)).spec!.csi!.volumeHandle);
    }
    const reference = snapshotSecretReference("GroupSnapshotter", groupClass.parameters, {
      contentName,
      snapshot: { name: vgs.metadata.name!, namespace },
    });
    await client.create<VolumeGroupSnapshotContent>(GVR.volumeGroupSnapshotContents, {
      apiVersion: "groupsnapshot.storage.k8s.io/v1",
      kind: "VolumeGroupSnapshotContent",
      metadata: {
        name: contentName,
        finalizers: [SNAPSHOT_FINALIZERS.groupContent],
        annotations: secretAnnotations(reference, {
          name: SNAPSHOT_ANNOTATIONS.groupDeletionSecretName,
          namespace: SNAPSHOT_ANNOTATIONS.groupDeletionSecretNamespace,
        }),
      },
      spec: {
        volumeGroupSnapshotRef: {
          kind: "VolumeGroupSnapshot",
          apiVersion: "groupsnapshot.storage.k8s.io/v1",
          namespace,
          name: vgs.metadata.name!,
          uid: vgs.metadata.uid!,
        },
        source: { volumeHandles: handles.sort() },
        volumeGroupSnapshotClassName: className,
        deletionPolicy: groupClass.deletionPolicy,
        driver: groupClass.driver,
      },
    });
  }
  if (!(vgs.metadata.finalizers ?? []).includes(VGS_BOUND_FINALIZER))
    await client.patch(
      GVR.volumeGroupSnapshots,
      vgs.metadata.name!,
      {
        metadata: {
          resourceVersion: vgs.metadata.resourceVersion,
          finalizers: [...(vgs.metadata.finalizers ?? []), VGS_BOUND_FINALIZER],
        },
      },
      { type: "merge", namespace },
    );
}

/**
 * The stand-in snapshot-controller (see the header). `distributed`: as upstream's
 * --enable-distributed-snapshotting, contents carry the managed-by label of the volume's node.
 */
export function startSnapshotControllerStandIn(
  t: TestContext,
  client: KubeClient,
  options: { distributed?: boolean; groups?: boolean } = {},
): SnapshotControllerStandIn {
  const standIn = loop(async () => {
    const snapshots = await client.list<VolumeSnapshot>(GVR.volumeSnapshots, { namespace: NS });
    for (const vs of snapshots.items) await syncSnapshot(client, vs, options.distributed ?? false);
    await syncOrphanContents(client);
    if (options.groups) {
      const groups = await client.list<VolumeGroupSnapshot>(GVR.volumeGroupSnapshots, { namespace: NS });
      for (const vgs of groups.items) await syncGroupSnapshot(client, vgs);
    }
  });
  defer(t, () => standIn.stop());
  return standIn;
}
