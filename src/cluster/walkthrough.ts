// The seed's walkthrough, run by `csikit up --walkthrough` (`npm start`): a StorageClass and a
// claim, a pod using it; wait until the volume is provisioned, attached, staged and published;
// write a file through the pod itself (pods/exec, as `kubectl exec` does) and check it in the
// driver's own storage; grow the claim while the pod runs (ControllerExpandVolume by the resizer,
// NodeExpandVolume by the node agent) and show the size statfs sees through the mount; delete the
// pod (unpublish, unstage), start a second pod — on another node when the volume may move there —
// and read the file back through it; delete it (detach) and the claim (DeleteVolume, PV gone).
// Where pods run no processes (`--pod-processes=false`, or no sandbox), the file is written into
// the mount from outside instead, and no second pod reads it. `expand` runs the same without the
// write/read.
// Where the snapshot components are built, `all` also snapshots, restores and group-snapshots
// the written claim (walkthrough-snapshots.ts) before the deletes.
// Each step prints how long it took. Every wait is bounded.

import { access, readFile, statfs, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  EVENT_REASONS,
  GVR,
  parseQuantity,
  quantityValue,
  type CoreEvent,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
  type VolumeAttachment,
} from "../api/index.ts";
import { CsikitError } from "../base/index.ts";
import { execInPod, isNotFound } from "../kube/index.ts";
import { KubeletPaths, sandboxUnavailable, uniqueVolumeName } from "../node/index.ts";
import { RESIZE_CONDITIONS } from "../sidecars/resizer/index.ts";
import type { RunningCluster } from "./cluster.ts";
import { mountsUnder } from "./drain.ts";
import { pollUntil } from "./poll.ts";
import { runSnapshotSteps, snapshotCrdsServed, snapshotStepsRun } from "./walkthrough-snapshots.ts";
import { nodeSnapshotStepRuns, runNodeSnapshotStep } from "./walkthrough-node-snapshot.ts";

const NAMESPACE = "default";
const CLASS = "walkthrough";
const CLAIM = "walkthrough-claim";
const POD = "walkthrough-pod";
/** The second pod, which reads back what the first wrote. */
const READER = "walkthrough-reader";
const FILE = "/data/hello.txt";
const VOLUME = "data";
const ATTRIBUTES_CLASS = "walkthrough-gold";
/** The kubelet's record beside a staging or publish target (FACTS.md, kubelet paths). */
const VOL_DATA_FILE = "vol_data.json";

/** `all`: the whole lifecycle with growth; `expand`: the lifecycle's mounts and the growth only. */
export const WALKTHROUGHS = ["all", "expand"] as const;
export type Walkthrough = (typeof WALKTHROUGHS)[number];

/** Size of the claim before and after the growth step (MiBs: the volume is a real directory). */
const SIZE_BEFORE = "1Mi";
const SIZE_AFTER = "2Mi";

export interface WalkthroughOptions {
  print: (line: string) => void;
  /** Which walkthrough. Default all. */
  which?: Walkthrough;
  /** Bound of each step, ms. Default 60000. */
  stepTimeoutMs?: number;
}

async function gone(probe: () => Promise<unknown>): Promise<true | undefined> {
  try {
    await probe();
    return undefined;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}

export async function runWalkthrough(
  cluster: RunningCluster,
  options: WalkthroughOptions,
  signal: AbortSignal,
): Promise<void> {
  const { admin: client, driverName } = cluster;
  const timeout = options.stepTimeoutMs ?? 60_000;
  let step = 0;
  const timed = async <T>(
    label: string,
    work: () => Promise<T>,
    detail?: (value: T) => string,
  ): Promise<T> => {
    step += 1;
    const started = performance.now();
    const value = await work();
    const extra = detail ? ` — ${detail(value)}` : "";
    options.print(`[${step}] ${label}${extra} (${((performance.now() - started) / 1000).toFixed(2)}s)`);
    return value;
  };
  options.print("");
  const which = options.which ?? "all";
  const grows = !cluster.plan.distributed;
  const modifies = classChangeRuns(cluster);
  const snapshots = which === "all" && snapshotStepsRun(cluster) && (await snapshotCrdsServed(cluster));
  const nodeSnapshot =
    which === "all" && nodeSnapshotStepRuns(cluster) && (await snapshotCrdsServed(cluster));
  const later = `${grows ? " → grow" : ""}${modifies ? " → change class" : ""}${snapshots ? " → snapshot, restore, group snapshot" : ""}${nodeSnapshot ? " → snapshot on its node" : ""} → delete`;
  options.print(
    which === "all"
      ? `walkthrough (seed 000): StorageClass → claim → pod → provision, attach, stage, publish → write through the pod${later.replace(" → delete", " → read through a second pod → delete")}`
      : `walkthrough (expand): StorageClass → claim → pod → provision, attach, stage, publish${later}`,
  );

  // Leftovers of an interrupted earlier walkthrough would make the creates below fail.
  await client.delete(GVR.pods, READER, { namespace: NAMESPACE }).catch(() => {});
  await client.delete(GVR.pods, POD, { namespace: NAMESPACE }).catch(() => {});
  await pollUntil("an earlier walkthrough pod to go", timeout, signal, () =>
    gone(() => client.get(GVR.pods, POD, { namespace: NAMESPACE })),
  );
  await client.delete(GVR.persistentVolumeClaims, CLAIM, { namespace: NAMESPACE }).catch(() => {});
  await pollUntil("an earlier walkthrough claim to go", timeout, signal, () =>
    gone(() => client.get(GVR.persistentVolumeClaims, CLAIM, { namespace: NAMESPACE })),
  );

  await timed(`StorageClass ${CLASS} created (provisioner ${driverName}, Immediate binding)`, async () => {
    await client.delete(GVR.storageClasses, CLASS).catch(() => {});
    await client.create<StorageClass>(GVR.storageClasses, {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: CLASS },
      provisioner: driverName,
      reclaimPolicy: "Delete",
      volumeBindingMode: "Immediate",
      // The PersistentVolumeClaimResize admission lets only such classes' claims grow.
      allowVolumeExpansion: true,
    });
  });
  await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: CLAIM, namespace: NAMESPACE },
    spec: {
      accessModes: ["ReadWriteOnce"],
      storageClassName: CLASS,
      resources: { requests: { storage: SIZE_BEFORE } },
    },
  });
  const volume = await timed(
    `claim ${CLAIM} created and bound: CreateVolume by the provisioner`,
    async () => {
      const claim = await pollUntil("the claim to be bound", timeout, signal, async () => {
        const c = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, CLAIM, {
          namespace: NAMESPACE,
        });
        return c.status?.phase === "Bound" ? c : undefined;
      });
      return client.get<PersistentVolume>(GVR.persistentVolumes, claim.spec?.volumeName ?? "");
    },
    (pv) => `PV ${pv.metadata?.name}, handle ${pv.spec?.csi?.volumeHandle}`,
  );
  const handle = volume.spec?.csi?.volumeHandle ?? "";
  const pvName = volume.metadata?.name ?? "";

  await client.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: POD, namespace: NAMESPACE },
    spec: {
      containers: [{ name: "app", image: "busybox", volumeMounts: [{ name: VOLUME, mountPath: "/data" }] }],
      volumes: [{ name: VOLUME, persistentVolumeClaim: { claimName: CLAIM } }],
    },
  });
  const scheduled = await timed(
    `pod ${POD} created and scheduled`,
    () =>
      pollUntil("the pod to be scheduled", timeout, signal, async () => {
        const pod = await client.get<Pod>(GVR.pods, POD, { namespace: NAMESPACE });
        return pod.spec?.nodeName ? pod : undefined;
      }),
    (pod) => `node ${pod.spec?.nodeName}`,
  );
  const nodeName = scheduled.spec?.nodeName ?? "";
  const podUID = scheduled.metadata?.uid ?? "";
  const paths = new KubeletPaths(cluster.layout.rootOf(nodeName));
  if (cluster.attachRequired)
    await timed("volume attached: ControllerPublishVolume by the attacher", () =>
      pollUntil("the VolumeAttachment to be attached", timeout, signal, async () => {
        const list = await client.list<VolumeAttachment>(GVR.volumeAttachments);
        return list.items.find(
          (a) =>
            a.spec?.source?.persistentVolumeName === pvName &&
            a.spec?.nodeName === nodeName &&
            a.status?.attached,
        );
      }),
    );
  else options.print(`    (no attach step: CSIDriver ${driverName} has attachRequired=false)`);
  const staging = paths.stagingTarget(driverName, handle);
  // A PV-backed volume's pod dir is named after the PV (the kubelet's spec name), not the pod's volume.
  const target = paths.publishTarget(podUID, pvName);
  // The CSI spec does not require NodeStageVolume or NodePublishVolume to mount anything (upstream
  // hostpath's staging is bookkeeping), so the steps read what the node agent reports, as a
  // kubelet's user would: the volume in the Node's status.volumesInUse, the kubelet's records
  // beside the targets (the pod's vol_data.json is written only once NodeStageVolume succeeded,
  // before NodePublishVolume), and the pod Running (only once every volume is published).
  const node = new NodeVolumeView(cluster, nodeName, uniqueVolumeName(driverName, handle));
  const stagedRecord = join(paths.stagingDir(driverName, handle), VOL_DATA_FILE);
  const publishRecord = join(paths.podVolumeDir(podUID, pvName), VOL_DATA_FILE);
  await timed(
    "volume staged: NodeStageVolume by the node agent",
    () =>
      pollUntil(
        "the node agent to stage the volume",
        timeout,
        signal,
        async () => (await node.inUse()) && (await exists(stagedRecord)) && (await exists(publishRecord)),
      ),
    () => `${staging} (node ${nodeName} reports it in use)`,
  );
  await timed(
    "volume published: NodePublishVolume by the node agent",
    () =>
      pollUntil("the pod to run with its volume published", timeout, signal, async () => {
        const pod = await client.get<Pod>(GVR.pods, POD, { namespace: NAMESPACE });
        return pod.status?.phase === "Running" ? pod : undefined;
      }),
    () => `${target}, pod Running`,
  );
  const message = `hello from csikit, ${new Date().toISOString()}\n`;
  // Pods run their commands (and take exec) only with pod processes on and a sandbox.
  const noExec =
    cluster.plan.podProcesses === false ? "up runs with --pod-processes=false" : await sandboxUnavailable();
  // csikit's hostpath keeps the volume under its state dir (a node's own when distributed).
  const driverDir = cluster.plan.distributed
    ? join(cluster.layout.driverStateDir, nodeName)
    : cluster.layout.driverStateDir;
  const inDriver =
    cluster.plan.driverSocket === undefined && cluster.plan.driverCommand === undefined
      ? join(driverDir, "volumes", handle, "hello.txt")
      : undefined;
  if (which === "all" && noExec === undefined)
    await timed(
      `file written through the pod (pods/exec, as kubectl exec): sh -c 'cat > ${FILE}'`,
      async () => {
        const written = await execInPod(client, NAMESPACE, POD, ["sh", "-c", `cat > ${FILE}`], {
          container: "app",
          stdin: message,
          timeoutMs: timeout,
          signal,
        });
        if (written.code !== 0)
          throw new CsikitError(
            "CSIKIT_ERR_WALKTHROUGH",
            `writing ${FILE} in pod ${POD} exited ${written.code}: ${written.stderr.trim()}`,
          );
        if (inDriver === undefined) return `${FILE} in pod ${POD}`;
        const back = await readFile(inDriver, "utf8");
        if (back !== message)
          throw new CsikitError(
            "CSIKIT_ERR_WALKTHROUGH",
            `the driver's storage holds ${JSON.stringify(back)} at ${inDriver}, the pod wrote ${JSON.stringify(message)}`,
          );
        return `${FILE} in pod ${POD}, found in the driver's storage at ${inDriver}`;
      },
      (where) => where,
    );
  else if (which === "all")
    await timed(
      "file written through the pod's mount, read back from the driver's storage",
      async () => {
        options.print(`    (written from outside the pod: ${noExec})`);
        await writeFile(join(target, "hello.txt"), message);
        const where = inDriver ?? join(target, "hello.txt");
        const back = await readFile(where, "utf8");
        if (back !== message)
          throw new CsikitError(
            "CSIKIT_ERR_WALKTHROUGH",
            `read back ${JSON.stringify(back)} from ${where}, wrote ${JSON.stringify(message)}`,
          );
        return where;
      },
      (where) => where,
    );

  if (cluster.plan.distributed)
    options.print(
      "    (no growth step: a distributed deployment runs no resizer — external-resizer has no node deployment, kubernetes-csi/external-resizer#142)",
    );
  else
    await growClaim(
      cluster,
      { timed, until: (what, probe) => pollUntil(what, timeout, signal, probe) },
      {
        pvName,
        target,
        print: options.print,
      },
    );

  if (modifies)
    await modifyClaim(
      cluster,
      { timed, until: (what, probe) => pollUntil(what, timeout, signal, probe) },
      options.print,
    );

  if (snapshots)
    await runSnapshotSteps(
      cluster,
      { timed, until: (what, probe) => pollUntil(what, timeout, signal, probe), print: options.print },
      { claim: CLAIM, storageClass: CLASS, file: "hello.txt", content: message },
    );
  if (nodeSnapshot)
    await runNodeSnapshotStep(
      cluster,
      { timed, until: (what, probe) => pollUntil(what, timeout, signal, probe), print: options.print },
      { claim: CLAIM },
    );

  await client.delete(GVR.pods, POD, { namespace: NAMESPACE });
  await timed("pod deleted: NodeUnpublishVolume by the node agent", async () => {
    await pollUntil("the pod to go", timeout, signal, () =>
      gone(() => client.get(GVR.pods, POD, { namespace: NAMESPACE })),
    );
    // The node agent lets a pod go only once NodeUnpublishVolume succeeded and its dir is removed.
    if (await exists(publishRecord))
      throw new CsikitError("CSIKIT_ERR_WALKTHROUGH", `${publishRecord} is still there after the pod went`);
  });
  await timed("volume unstaged: NodeUnstageVolume by the node agent", () =>
    pollUntil(
      "the node agent to unstage the volume",
      timeout,
      signal,
      async () => !(await node.inUse()) && !(await exists(stagedRecord)),
    ),
  );
  const detached = async (label: string) => {
    if (cluster.attachRequired)
      await timed(label, () =>
        pollUntil("the VolumeAttachment to go", timeout, signal, async () => {
          const list = await client.list<VolumeAttachment>(GVR.volumeAttachments);
          return list.items.some((a) => a.spec?.source?.persistentVolumeName === pvName) ? undefined : true;
        }),
      );
  };
  await detached("volume detached: ControllerUnpublishVolume, VolumeAttachment gone");
  // The volume is free again: a second pod takes it (attach, stage, publish anew) and reads.
  if (which === "all" && noExec === undefined) {
    await readThroughSecondPod(cluster, { timed, signal, timeout, pvName, firstNode: nodeName, message });
    await detached("volume detached again after the second pod");
  }
  await client.delete(GVR.persistentVolumeClaims, CLAIM, { namespace: NAMESPACE });
  await timed("claim deleted: DeleteVolume by the provisioner, PV gone", () =>
    pollUntil("the PV to go", timeout, signal, () => gone(() => client.get(GVR.persistentVolumes, pvName))),
  );
  await client.delete(GVR.storageClasses, CLASS).catch(() => {});
  await client.delete(GVR.volumeAttributesClasses, ATTRIBUTES_CLASS).catch(() => {});
  options.print("walkthrough done: every step passed");
  options.print("");
}

/** A node the volume may be used on besides `firstNode`, by the PV's node affinity (none: any). */
async function otherNodeFor(
  cluster: RunningCluster,
  pvName: string,
  firstNode: string,
): Promise<string | undefined> {
  const pv = await cluster.admin.get<PersistentVolume>(GVR.persistentVolumes, pvName);
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  const nodes = (await cluster.admin.list<Node>(GVR.nodes)).items;
  const matches = (node: Node) =>
    terms.length === 0 ||
    terms.some((term) =>
      (term.matchExpressions ?? []).every((expression) => {
        const value = node.metadata?.labels?.[expression.key];
        if (expression.operator === "In")
          return value !== undefined && (expression.values ?? []).includes(value);
        if (expression.operator === "NotIn")
          return value === undefined || !(expression.values ?? []).includes(value);
        if (expression.operator === "Exists") return value !== undefined;
        if (expression.operator === "DoesNotExist") return value === undefined;
        return false;
      }),
    );
  return nodes.find((node) => node.metadata?.name !== firstNode && matches(node))?.metadata?.name;
}

/**
 * The read-back: a second pod on the same claim, on another node when the volume's topology
 * lets it move (attach, stage and publish there), reads the file through pods/exec; then it goes.
 */
async function readThroughSecondPod(
  cluster: RunningCluster,
  step: {
    timed: <T>(label: string, work: () => Promise<T>, detail?: (value: T) => string) => Promise<T>;
    signal: AbortSignal;
    timeout: number;
    pvName: string;
    firstNode: string;
    message: string;
  },
): Promise<void> {
  const client = cluster.admin;
  const other = await otherNodeFor(cluster, step.pvName, step.firstNode);
  const node = other ?? step.firstNode;
  await client.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: READER, namespace: NAMESPACE },
    spec: {
      // Where the reader runs is the scheduler's choice within this node's name.
      nodeSelector: { "kubernetes.io/hostname": node },
      containers: [{ name: "app", image: "busybox", volumeMounts: [{ name: VOLUME, mountPath: "/data" }] }],
      volumes: [{ name: VOLUME, persistentVolumeClaim: { claimName: CLAIM } }],
    },
  });
  await step.timed(
    other
      ? `second pod ${READER} on node ${node}: the volume moves (attach, stage, publish there)`
      : `second pod ${READER} on node ${node} (the volume's topology keeps it on this node)`,
    () =>
      pollUntil("the second pod to run", step.timeout, step.signal, async () => {
        const pod = await client.get<Pod>(GVR.pods, READER, { namespace: NAMESPACE });
        return pod.status?.phase === "Running" ? pod : undefined;
      }),
  );
  await step.timed(
    `file read back through the second pod (pods/exec): cat ${FILE}`,
    async () => {
      const read = await execInPod(client, NAMESPACE, READER, ["cat", FILE], {
        container: "app",
        timeoutMs: step.timeout,
        signal: step.signal,
      });
      if (read.code !== 0 || read.stdout !== step.message)
        throw new CsikitError(
          "CSIKIT_ERR_WALKTHROUGH",
          `pod ${READER} read ${JSON.stringify(read.stdout)} (exit ${read.code}${read.stderr ? `: ${read.stderr.trim()}` : ""}), the first pod wrote ${JSON.stringify(step.message)}`,
        );
      return read.stdout.trim();
    },
    (text) => JSON.stringify(text),
  );
  await client.delete(GVR.pods, READER, { namespace: NAMESPACE });
  await step.timed(`second pod ${READER} deleted`, () =>
    pollUntil("the second pod to go", step.timeout, step.signal, () =>
      gone(() => client.get(GVR.pods, READER, { namespace: NAMESPACE })),
    ),
  );
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** What a node reports about one volume: whether its status.volumesInUse lists it. */
class NodeVolumeView {
  readonly #cluster: RunningCluster;
  readonly #node: string;
  readonly #uniqueName: string;
  constructor(cluster: RunningCluster, node: string, uniqueName: string) {
    this.#cluster = cluster;
    this.#node = node;
    this.#uniqueName = uniqueName;
  }
  async inUse(): Promise<boolean> {
    const node = await this.#cluster.admin.get<Node>(GVR.nodes, this.#node);
    return (node.status?.volumesInUse ?? []).includes(this.#uniqueName);
  }
}

interface GrowSteps {
  timed: <T>(label: string, work: () => Promise<T>, detail?: (value: T) => string) => Promise<T>;
  until: <T>(what: string, probe: () => Promise<T | undefined>) => Promise<T>;
}

/** The claim's Events the growth step shows (resizer and kubelet). */
const RESIZE_EVENT_REASONS: ReadonlySet<string> = new Set(
  [
    EVENT_REASONS.resizing,
    EVENT_REASONS.volumeResizeFailed,
    EVENT_REASONS.volumeResizeSuccessful,
    EVENT_REASONS.fileSystemResizeRequired,
    EVENT_REASONS.fileSystemResizeSuccessful,
  ].map((entry) => entry.key),
);

const bytesOf = (quantity: string | undefined): bigint =>
  quantity === undefined ? -1n : quantityValue(parseQuantity(quantity));

/**
 * Grows the walkthrough claim while its pod runs: the resizer's ControllerExpandVolume shows as
 * the PV's capacity, the node agent's NodeExpandVolume as the claim's status.capacity with the
 * resize conditions gone; then statfs through the published path.
 */
async function growClaim(
  cluster: RunningCluster,
  steps: GrowSteps,
  volume: { pvName: string; target: string; print: (line: string) => void },
): Promise<void> {
  const { admin: client } = cluster;
  const wanted = bytesOf(SIZE_AFTER);
  const claimOf = (): Promise<PersistentVolumeClaim> =>
    client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, CLAIM, { namespace: NAMESPACE });
  await client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    CLAIM,
    { spec: { resources: { requests: { storage: SIZE_AFTER } } } },
    { namespace: NAMESPACE },
  );
  await steps.timed(
    `claim grown ${SIZE_BEFORE} → ${SIZE_AFTER}: ControllerExpandVolume by the resizer`,
    () =>
      steps.until("the PV's capacity to grow", async () => {
        const pv = await client.get<PersistentVolume>(GVR.persistentVolumes, volume.pvName);
        return bytesOf(pv.spec?.capacity?.storage) >= wanted ? pv : undefined;
      }),
    (pv) => `PV capacity ${pv.spec?.capacity?.storage}`,
  );
  await steps.timed(
    "filesystem grown: NodeExpandVolume by the node agent",
    () =>
      steps.until("the claim's status.capacity to grow and its resize conditions to clear", async () => {
        const claim = await claimOf();
        const pending = (claim.status?.conditions ?? []).filter((c) => RESIZE_CONDITIONS.has(c.type));
        return bytesOf(claim.status?.capacity?.storage) >= wanted && pending.length === 0 ? claim : undefined;
      }),
    (claim) => `claim status.capacity ${claim.status?.capacity?.storage}, no resize condition left`,
  );
  // The node agent records FileSystemResizeSuccessful through its event queue after the status
  // write the step above waited for, so the Event may land a moment later: wait for it.
  const reasons = await steps.until("the claim's FileSystemResizeSuccessful event", async () => {
    const events = await client.list<CoreEvent>(GVR.events, { namespace: NAMESPACE });
    const seen = events.items
      .filter(
        (event) =>
          event.involvedObject?.kind === "PersistentVolumeClaim" && event.involvedObject.name === CLAIM,
      )
      .filter((event) => RESIZE_EVENT_REASONS.has(event.reason ?? ""))
      .map((event) => event.reason);
    return seen.includes(EVENT_REASONS.fileSystemResizeSuccessful.key) ? seen : undefined;
  });
  volume.print(`    claim events: ${reasons.join(", ") || "(none)"}`);
  if (!(await mountsUnder(cluster.layout.nodesDir)).includes(volume.target)) {
    volume.print(`    statfs skipped: ${volume.target} is not a mount (no mount privilege here)`);
    return;
  }
  const fs = await statfs(volume.target);
  volume.print(
    `    statfs through the mount: ${fs.blocks * fs.bsize} bytes, ${fs.bavail * fs.bsize} available ` +
      "(a hostpath filesystem volume is a directory: statfs sees the filesystem that holds it)",
  );
}

/**
 * Whether the walkthrough changes the claim's class: a user's driver may not offer
 * ControllerModifyVolume, and a distributed deployment runs no resizer, so it is the step of
 * hostpath behind up's own controller sidecars.
 */
function classChangeRuns(cluster: RunningCluster): boolean {
  const { plan } = cluster;
  return !plan.distributed && plan.driverSocket === undefined && plan.driverCommand === undefined;
}

/**
 * Moves the running claim to another VolumeAttributesClass (GA and on since Kubernetes 1.34):
 * the resizer's ControllerModifyVolume shows as status.currentVolumeAttributesClassName and the
 * claim's VolumeModifySuccessful event.
 */
async function modifyClaim(
  cluster: RunningCluster,
  steps: GrowSteps,
  print: (line: string) => void,
): Promise<void> {
  const { admin: client } = cluster;
  // A resumed cluster may have it from an interrupted walkthrough.
  const missing = await gone(() => client.get(GVR.volumeAttributesClasses, ATTRIBUTES_CLASS));
  if (missing)
    await client.create(GVR.volumeAttributesClasses, {
      apiVersion: `${GVR.volumeAttributesClasses.group}/${GVR.volumeAttributesClasses.version}`,
      kind: "VolumeAttributesClass",
      metadata: { name: ATTRIBUTES_CLASS },
      driverName: cluster.driverName,
      parameters: { iops: "3000" },
    });
  await client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    CLAIM,
    { spec: { volumeAttributesClassName: ATTRIBUTES_CLASS } },
    { namespace: NAMESPACE },
  );
  await steps.timed(
    `claim moved to VolumeAttributesClass ${ATTRIBUTES_CLASS}: ControllerModifyVolume by the resizer`,
    () =>
      steps.until(
        "the claim's status.currentVolumeAttributesClassName and VolumeModifySuccessful event",
        async () => {
          const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, CLAIM, {
            namespace: NAMESPACE,
          });
          if (claim.status?.currentVolumeAttributesClassName !== ATTRIBUTES_CLASS) return undefined;
          const events = await client.list<CoreEvent>(GVR.events, { namespace: NAMESPACE });
          const modified = events.items.some(
            (event) =>
              event.involvedObject?.kind === "PersistentVolumeClaim" &&
              event.involvedObject.name === CLAIM &&
              event.reason === EVENT_REASONS.volumeModifySuccessful.key,
          );
          return modified ? claim : undefined;
        },
      ),
    (claim) =>
      `status.currentVolumeAttributesClassName ${claim.status?.currentVolumeAttributesClassName}, event ${EVENT_REASONS.volumeModifySuccessful.key}`,
  );
  print(
    `    kubectl get pvc ${CLAIM} -o jsonpath='{.status.currentVolumeAttributesClassName}' → ${ATTRIBUTES_CLASS}`,
  );
}
