// The chaos suite's invariant checker: what must hold once a cluster has settled after faults.
// `collectState` reads the cluster (API objects, the driver's own ListVolumes/ListSnapshots, the
// cluster's mounts); `checkInvariants` is pure — state and the run's intent in, violations out —
// so a seeded leak shows it reporting exactly what is wrong (invariants.test.ts).

import {
  GVR,
  type GroupVersionResource,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../src/api/index.ts";
import type { CsiClient } from "../src/csi/index.ts";
import { isNotFound, type KubeClient, type KubeObject } from "../src/kube/index.ts";

/** Everything the checks read, taken after the run settled. */
export interface ClusterState {
  claims: PersistentVolumeClaim[];
  volumes: PersistentVolume[];
  attachments: VolumeAttachment[];
  pods: Pod[];
  snapshots: VolumeSnapshot[];
  contents: VolumeSnapshotContent[];
  /** The driver's volume IDs (ControllerListVolumes). */
  backendVolumes: string[];
  /** The driver's snapshot IDs (ListSnapshots). */
  backendSnapshots: string[];
  /** Mount points under the cluster's state dir, as its processes see them. */
  mounts: string[];
}

/** What the run asked for: objects to keep (with their uid when created) and objects deleted. */
export interface RunIntent {
  namespace: string;
  /** Claims that must exist, Bound, with the uid their create returned. */
  keptClaims: ReadonlyMap<string, string>;
  /** Pods that must be Running, by name → uid. */
  keptPods: ReadonlyMap<string, string>;
  /** Snapshots that must be readyToUse. */
  keptSnapshots: readonly string[];
  /** Claims whose request grew: name → the size they must report (bytes). */
  grown: ReadonlyMap<string, number>;
  /** Names deleted during the run: they and everything they owned must be gone. */
  deletedClaims: readonly string[];
  deletedPods: readonly string[];
  deletedSnapshots: readonly string[];
}

export interface Violation {
  /** leak: something without an owner; lost: acknowledged and gone; stuck: not converged. */
  kind: "leak" | "lost" | "stuck";
  what: string;
}

const name = (object: KubeObject): string => object.metadata?.name ?? "?";

/** Bytes of a quantity as the API returns sizes here ("1Mi", "2Mi", "1048576"). */
export function quantityBytes(text: string | undefined): number {
  const match = /^(\d+)(Ki|Mi|Gi)?$/.exec(text ?? "");
  if (!match) return Number.NaN;
  const units: Readonly<Record<string, number>> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
  const unit = units[match[2] ?? ""] ?? 1;
  return Number(match[1]) * unit;
}

/** Not converged: what the intent says should be so and is not. */
function convergence(state: ClusterState, intent: RunIntent): Violation[] {
  const out: Violation[] = [];
  const claims = new Map(state.claims.map((c) => [name(c), c]));
  for (const [claimName, uid] of intent.keptClaims) {
    const claim = claims.get(claimName);
    if (!claim) out.push({ kind: "lost", what: `claim ${claimName} (created, never deleted) is gone` });
    else if (claim.metadata?.uid !== uid)
      out.push({
        kind: "lost",
        what: `claim ${claimName} was replaced (uid ${claim.metadata?.uid}, created ${uid})`,
      });
    else if (claim.status?.phase !== "Bound")
      out.push({
        kind: "stuck",
        what: `claim ${claimName} is ${claim.status?.phase ?? "without phase"}, not Bound`,
      });
    const size = intent.grown.get(claimName);
    if (claim && size !== undefined && !(quantityBytes(claim.status?.capacity?.storage) >= size))
      out.push({
        kind: "stuck",
        what: `claim ${claimName} reports ${claim.status?.capacity?.storage ?? "no capacity"}, asked to grow to ${size} bytes`,
      });
  }
  const pods = new Map(state.pods.map((p) => [name(p), p]));
  for (const [podName, uid] of intent.keptPods) {
    const pod = pods.get(podName);
    if (!pod) out.push({ kind: "lost", what: `pod ${podName} (created, never deleted) is gone` });
    else if (pod.metadata?.uid !== uid) out.push({ kind: "lost", what: `pod ${podName} was replaced` });
    else if (pod.status?.phase !== "Running")
      out.push({
        kind: "stuck",
        what: `pod ${podName} is ${pod.status?.phase ?? "without phase"}, not Running`,
      });
    else if ((pod.status.containerStatuses ?? []).some((c) => c.ready !== true))
      out.push({ kind: "stuck", what: `pod ${podName} is Running with a container not ready` });
  }
  const snapshots = new Map(state.snapshots.map((s) => [name(s), s]));
  for (const snapshotName of intent.keptSnapshots) {
    const snapshot = snapshots.get(snapshotName);
    if (!snapshot) out.push({ kind: "lost", what: `snapshot ${snapshotName} is gone` });
    else if (snapshot.status?.readyToUse !== true)
      out.push({ kind: "stuck", what: `snapshot ${snapshotName} is not readyToUse` });
  }
  for (const [list, kind] of [
    [intent.deletedClaims, claims],
    [intent.deletedPods, pods],
    [intent.deletedSnapshots, snapshots],
  ] as const)
    for (const deleted of list)
      if (kind.has(deleted)) out.push({ kind: "stuck", what: `${deleted} was deleted and still exists` });
  return out;
}

/** Objects that lost their owner, and backend objects no API object names. */
function leaks(state: ClusterState): Violation[] {
  const out: Violation[] = [];
  const claimUids = new Set(state.claims.map((c) => c.metadata?.uid));
  const handles = new Set(state.volumes.map((pv) => pv.spec?.csi?.volumeHandle).filter(Boolean));
  const backend = new Set(state.backendVolumes);
  for (const id of state.backendVolumes)
    if (!handles.has(id))
      out.push({ kind: "leak", what: `backend volume ${id}: no PersistentVolume names it` });
  for (const pv of state.volumes) {
    const handle = pv.spec?.csi?.volumeHandle;
    if (handle && !backend.has(handle))
      out.push({ kind: "lost", what: `PersistentVolume ${name(pv)}: its backend volume ${handle} is gone` });
    const claimUid = pv.spec?.claimRef?.uid;
    if (claimUid === undefined || !claimUids.has(claimUid))
      out.push({
        kind: "leak",
        what: `PersistentVolume ${name(pv)} (${pv.status?.phase}): its claim is gone`,
      });
  }
  const contentHandles = new Set(state.contents.map((c) => c.status?.snapshotHandle).filter(Boolean));
  for (const id of state.backendSnapshots)
    if (!contentHandles.has(id))
      out.push({ kind: "leak", what: `backend snapshot ${id}: no content names it` });
  const snapshotUids = new Set(state.snapshots.map((s) => s.metadata?.uid));
  for (const content of state.contents)
    if (!snapshotUids.has(content.spec?.volumeSnapshotRef?.uid))
      out.push({ kind: "leak", what: `VolumeSnapshotContent ${name(content)}: its snapshot is gone` });
  // An attachment is owed only to a pod on that node using that PV's claim.
  const pvByName = new Map(state.volumes.map((pv) => [name(pv), pv]));
  const used = new Set<string>();
  for (const pod of state.pods) {
    if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") continue;
    for (const volume of pod.spec?.volumes ?? []) {
      const claim = state.claims.find((c) => name(c) === volume.persistentVolumeClaim?.claimName);
      if (claim?.spec?.volumeName) used.add(`${pod.spec?.nodeName}/${claim.spec.volumeName}`);
    }
  }
  for (const va of state.attachments) {
    const pvName = va.spec?.source?.persistentVolumeName ?? "";
    if (!pvByName.has(pvName) || !used.has(`${va.spec?.nodeName}/${pvName}`))
      out.push({
        kind: "leak",
        what: `VolumeAttachment ${name(va)} (${pvName} on ${va.spec?.nodeName}): no pod uses it`,
      });
  }
  // A pod's mounts carry its uid; a staging mount its PV's hash, which only the count bounds.
  const podUids = new Set(state.pods.map((p) => p.metadata?.uid));
  for (const point of state.mounts) {
    const podUid = /\/pods\/([0-9a-f-]{36})\//.exec(point)?.[1];
    if (podUid !== undefined && !podUids.has(podUid))
      out.push({ kind: "leak", what: `mount ${point}: pod ${podUid} is gone` });
  }
  const staged = state.mounts.filter((p) => p.endsWith("/globalmount")).length;
  if (staged > used.size)
    out.push({ kind: "leak", what: `${staged} staging mounts for ${used.size} volume(s) in use` });
  return out;
}

/** Finalizers that hold an object being deleted once everything settled. */
function stuckDeletions(state: ClusterState): Violation[] {
  const all: KubeObject[] = [
    ...state.claims,
    ...state.volumes,
    ...state.attachments,
    ...state.pods,
    ...state.snapshots,
    ...state.contents,
  ];
  return all
    .filter((o) => o.metadata?.deletionTimestamp !== undefined)
    .map((o) => ({
      kind: "stuck" as const,
      what: `${o.kind ?? "object"} ${name(o)} deleted at ${o.metadata?.deletionTimestamp}, held by ${(o.metadata?.finalizers ?? []).join(", ") || "nothing"}`,
    }));
}

export function checkInvariants(state: ClusterState, intent: RunIntent): Violation[] {
  return [...convergence(state, intent), ...leaks(state), ...stuckDeletions(state)];
}

async function listAll<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  kind: string,
): Promise<T[]> {
  try {
    return (await client.list<T>(gvr)).items.map((item) => ({ ...item, kind }));
  } catch (error) {
    // A cluster without the snapshot CRDs has no snapshots to check.
    if (isNotFound(error) && gvr.group === "snapshot.storage.k8s.io") return [];
    throw error;
  }
}

async function pagedIds(
  page: (token: string) => Promise<{ ids: string[]; next: string }>,
): Promise<string[]> {
  const ids: string[] = [];
  const seen = new Set<string>();
  for (let token = ""; ;) {
    const { ids: more, next } = await page(token);
    ids.push(...more);
    if (next === "" || seen.has(next)) return ids;
    seen.add(next);
    token = next;
  }
}

/** Reads the state the checks need; `mounts` come from the caller (its mount namespace view). */
export async function collectState(
  client: KubeClient,
  csi: CsiClient,
  mounts: readonly string[],
): Promise<ClusterState> {
  const [claims, volumes, attachments, pods, snapshots, contents] = await Promise.all([
    listAll<PersistentVolumeClaim>(client, GVR.persistentVolumeClaims, "PersistentVolumeClaim"),
    listAll<PersistentVolume>(client, GVR.persistentVolumes, "PersistentVolume"),
    listAll<VolumeAttachment>(client, GVR.volumeAttachments, "VolumeAttachment"),
    listAll<Pod>(client, GVR.pods, "Pod"),
    listAll<VolumeSnapshot>(client, GVR.volumeSnapshots, "VolumeSnapshot"),
    listAll<VolumeSnapshotContent>(client, GVR.volumeSnapshotContents, "VolumeSnapshotContent"),
  ]);
  const backendVolumes = await pagedIds(async (startingToken) => {
    const page = await csi.controller.listVolumes({ maxEntries: 100, startingToken });
    return { ids: page.entries.map((e) => e.volume?.volumeId ?? ""), next: page.nextToken };
  });
  const backendSnapshots = await pagedIds(async (startingToken) => {
    const page = await csi.controller.listSnapshots({ maxEntries: 100, startingToken });
    return { ids: page.entries.map((e) => e.snapshot?.snapshotId ?? ""), next: page.nextToken };
  });
  return {
    claims,
    volumes,
    attachments,
    pods: pods.filter((p) => p.metadata?.namespace !== "kube-system"),
    snapshots,
    contents,
    backendVolumes,
    backendSnapshots,
    mounts: [...mounts],
  };
}
