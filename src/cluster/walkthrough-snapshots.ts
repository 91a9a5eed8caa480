// The walkthrough's snapshot steps (issue 25 §6), run while the walkthrough's pod still has the
// file it wrote: snapshot the claim (VolumeSnapshot → the snapshot-controller's content → the
// snapshotter's CreateSnapshot) until readyToUse; restore it into a new claim (the provisioner's
// CreateVolume from the snapshot) mounted by a new pod, and read the file back through that
// pod's mount; snapshot two claims at once (a VolumeGroupSnapshot selecting both by label →
// CreateVolumeGroupSnapshot, one member VolumeSnapshot per claim); then delete everything and
// check nothing is left: no VolumeSnapshotContent or VolumeGroupSnapshotContent of these
// snapshots, and no backend snapshot of these volumes in the driver (ListSnapshots).
// They run only when this checkout has the snapshot-controller and the snapshotter, beside
// csikit's own hostpath (a user's driver may not snapshot), not distributed.

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeGroupSnapshot,
  type VolumeSnapshot,
} from "../api/index.ts";
import { CsikitError } from "../base/index.ts";
import { CsiClient } from "../csi/index.ts";
import { isNotFound, type KubeObject } from "../kube/index.ts";
import { KubeletPaths } from "../node/index.ts";
import type { RunningCluster } from "./cluster.ts";
import { controllerSocket, planComponents } from "./components.ts";

const NAMESPACE = "default";
const SNAPSHOT_CLASS = "walkthrough-snapclass";
const GROUP_CLASS = "walkthrough-groupclass";
const SNAPSHOT = "walkthrough-snapshot";
const RESTORED = "walkthrough-restored";
const RESTORE_POD = "walkthrough-restore-pod";
const SECOND_CLAIM = "walkthrough-claim-2";
const GROUP = "walkthrough-group";
/** The label the group snapshot selects both claims by. */
const GROUP_LABEL = "csikit.io/walkthrough-group";

/**
 * Whether the snapshot steps run on this cluster (see the header): `up` runs both snapshot
 * components (their commands are in the checkout and the component table has them).
 */
export function snapshotStepsRun(cluster: Pick<RunningCluster, "plan">): boolean {
  const { plan } = cluster;
  if (plan.driverSocket !== undefined || plan.driverCommand !== undefined || plan.distributed) return false;
  const planned = new Set(planComponents(plan).instances.map((i) => i.subcommand));
  return planned.has("snapshot-controller") && planned.has("snapshotter");
}

/** Whether the API server serves the snapshot CRDs `up` installs (deploy/crds). */
export async function snapshotCrdsServed(cluster: Pick<RunningCluster, "admin">): Promise<boolean> {
  return cluster.admin.list(GVR.volumeGroupSnapshots, { namespace: NAMESPACE, limit: 1 }).then(
    () => true,
    () => false,
  );
}

export interface SnapshotSteps {
  timed: <T>(label: string, work: () => Promise<T>, detail?: (value: T) => string) => Promise<T>;
  until: <T>(what: string, probe: () => Promise<T | undefined | false>) => Promise<T>;
  print: (line: string) => void;
}

export interface WrittenClaim {
  /** The walkthrough's claim, with the file below in it. */
  claim: string;
  storageClass: string;
  /** The file written through the pod's mount, and what it holds. */
  file: string;
  content: string;
}

/** true once `probe` answers NotFound (undefined while it finds the object). */
export async function gone(probe: () => Promise<unknown>): Promise<true | undefined> {
  try {
    await probe();
    return undefined;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}

function claimManifest(
  name: string,
  storageClass: string,
  size: string,
  extra: {
    labels?: Record<string, string>;
    dataSource?: { apiGroup: string; kind: string; name: string };
  } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NAMESPACE, ...(extra.labels ? { labels: extra.labels } : {}) },
    spec: {
      accessModes: ["ReadWriteOnce"],
      storageClassName: storageClass,
      resources: { requests: { storage: size } },
      ...(extra.dataSource ? { dataSource: extra.dataSource } : {}),
    },
  };
}

/** Removes what an interrupted earlier run left (the creates below would fail on it). */
async function clearLeftovers(cluster: RunningCluster, steps: SnapshotSteps): Promise<void> {
  const { admin: client } = cluster;
  const deletions: [Parameters<typeof client.delete>[0], string, string?][] = [
    [GVR.pods, RESTORE_POD, NAMESPACE],
    [GVR.volumeGroupSnapshots, GROUP, NAMESPACE],
    [GVR.volumeSnapshots, SNAPSHOT, NAMESPACE],
    [GVR.persistentVolumeClaims, RESTORED, NAMESPACE],
    [GVR.persistentVolumeClaims, SECOND_CLAIM, NAMESPACE],
  ];
  for (const [gvr, name, namespace] of deletions) {
    await client.delete(gvr, name, namespace ? { namespace } : {}).catch(() => {});
    await steps.until(`an earlier walkthrough's ${gvr.resource}/${name} to go`, () =>
      gone(() => client.get(gvr, name, namespace ? { namespace } : {})),
    );
  }
}

async function ensureClasses(cluster: RunningCluster): Promise<void> {
  const { admin: client, driverName } = cluster;
  for (const [gvr, name, kind, apiVersion] of [
    [GVR.volumeSnapshotClasses, SNAPSHOT_CLASS, "VolumeSnapshotClass", "snapshot.storage.k8s.io/v1"],
    [
      GVR.volumeGroupSnapshotClasses,
      GROUP_CLASS,
      "VolumeGroupSnapshotClass",
      "groupsnapshot.storage.k8s.io/v1",
    ],
  ] as const) {
    if (!(await gone(() => client.get(gvr, name)))) continue;
    await client.create(gvr, {
      apiVersion,
      kind,
      metadata: { name },
      driver: driverName,
      deletionPolicy: "Delete",
    } as KubeObject);
  }
}

/** A bound claim's PV. */
async function boundVolume(
  cluster: RunningCluster,
  steps: SnapshotSteps,
  claim: string,
): Promise<PersistentVolume> {
  const { admin: client } = cluster;
  const bound = await steps.until(`claim ${claim} to be bound`, async () => {
    const c = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, claim, {
      namespace: NAMESPACE,
    });
    return c.status?.phase === "Bound" ? c : undefined;
  });
  return client.get<PersistentVolume>(GVR.persistentVolumes, bound.spec?.volumeName ?? "");
}

/** The snapshot steps; see the header. Every wait is bounded by `steps.until`. */
export async function runSnapshotSteps(
  cluster: RunningCluster,
  steps: SnapshotSteps,
  written: WrittenClaim,
): Promise<void> {
  const { admin: client, driverName } = cluster;
  await clearLeftovers(cluster, steps);
  await ensureClasses(cluster);
  const source = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, written.claim, {
    namespace: NAMESPACE,
  });
  const size = source.status?.capacity?.storage ?? source.spec?.resources?.requests?.storage ?? "1Mi";
  const handles = [(await boundVolume(cluster, steps, written.claim)).spec?.csi?.volumeHandle ?? ""];

  // 1. Snapshot the written claim.
  await client.create(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name: SNAPSHOT, namespace: NAMESPACE },
    spec: { volumeSnapshotClassName: SNAPSHOT_CLASS, source: { persistentVolumeClaimName: written.claim } },
  });
  const snapshot = await steps.timed(
    `VolumeSnapshot ${SNAPSHOT} of ${written.claim} readyToUse: CreateSnapshot by the snapshotter`,
    () =>
      steps.until("the snapshot to be ready", async () => {
        const s = await client.get<VolumeSnapshot & KubeObject>(GVR.volumeSnapshots, SNAPSHOT, {
          namespace: NAMESPACE,
        });
        return s.status?.readyToUse === true ? s : undefined;
      }),
    (s) => `content ${s.status?.boundVolumeSnapshotContentName}, restoreSize ${s.status?.restoreSize}`,
  );
  const contents = new Set([snapshot.status?.boundVolumeSnapshotContentName ?? ""]);

  // 2. Restore it into a new claim, mounted by a new pod; read the file back through that mount.
  await client.create(
    GVR.persistentVolumeClaims,
    claimManifest(RESTORED, written.storageClass, size, {
      dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: SNAPSHOT },
    }),
  );
  const restored = await steps.timed(
    `claim ${RESTORED} restored from ${SNAPSHOT}: CreateVolume from the snapshot by the provisioner`,
    () => boundVolume(cluster, steps, RESTORED),
    (pv) => `PV ${pv.metadata?.name}`,
  );
  handles.push(restored.spec?.csi?.volumeHandle ?? "");
  await client.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: RESTORE_POD, namespace: NAMESPACE },
    spec: {
      containers: [{ name: "app", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: RESTORED } }],
    },
  });
  await steps.timed(
    `pod ${RESTORE_POD} reads ${written.file} through the restored claim's mount`,
    async () => {
      const pod = await steps.until("the restore pod to run", async () => {
        const p = await client.get<Pod>(GVR.pods, RESTORE_POD, { namespace: NAMESPACE });
        return p.status?.phase === "Running" ? p : undefined;
      });
      const paths = new KubeletPaths(cluster.layout.rootOf(pod.spec?.nodeName ?? ""));
      const where = join(
        paths.publishTarget(pod.metadata?.uid ?? "", restored.metadata?.name ?? ""),
        written.file,
      );
      const back = await readFile(where, "utf8");
      if (back !== written.content)
        throw new CsikitError(
          "CSIKIT_ERR_WALKTHROUGH",
          `read back ${JSON.stringify(back)} from ${where}, wrote ${JSON.stringify(written.content)} before the snapshot`,
        );
      return where;
    },
    (where) => `${where}: the content written before the snapshot`,
  );

  // 3. A group snapshot of two claims: the written one and a second, selected by a label.
  await client.patch(
    GVR.persistentVolumeClaims,
    written.claim,
    { metadata: { labels: { [GROUP_LABEL]: "true" } } },
    { namespace: NAMESPACE },
  );
  await client.create(
    GVR.persistentVolumeClaims,
    claimManifest(SECOND_CLAIM, written.storageClass, "1Mi", { labels: { [GROUP_LABEL]: "true" } }),
  );
  handles.push((await boundVolume(cluster, steps, SECOND_CLAIM)).spec?.csi?.volumeHandle ?? "");
  await client.create(GVR.volumeGroupSnapshots, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshot",
    metadata: { name: GROUP, namespace: NAMESPACE },
    spec: {
      volumeGroupSnapshotClassName: GROUP_CLASS,
      source: { selector: { matchLabels: { [GROUP_LABEL]: "true" } } },
    },
  });
  const members = await steps.timed(
    `VolumeGroupSnapshot ${GROUP} of ${written.claim} and ${SECOND_CLAIM} readyToUse: CreateVolumeGroupSnapshot by the snapshotter`,
    () =>
      steps.until("the group snapshot and its members to be ready", async () => {
        const group = await client.get<VolumeGroupSnapshot & KubeObject>(GVR.volumeGroupSnapshots, GROUP, {
          namespace: NAMESPACE,
        });
        if (group.status?.readyToUse !== true) return undefined;
        const list = await client.list<VolumeSnapshot & KubeObject>(GVR.volumeSnapshots, {
          namespace: NAMESPACE,
        });
        const mine = list.items.filter((s) => s.status?.volumeGroupSnapshotName === GROUP);
        return mine.length === 2 && mine.every((s) => s.status?.readyToUse === true)
          ? { group, members: mine }
          : undefined;
      }),
    ({ group, members: m }) =>
      `content ${group.status?.boundVolumeGroupSnapshotContentName}, members ${m
        .map((s) => `${s.metadata?.name} (${s.spec.source.persistentVolumeClaimName})`)
        .join(", ")}`,
  );
  const groupContent = members.group.status?.boundVolumeGroupSnapshotContentName ?? "";
  for (const member of members.members) contents.add(member.status?.boundVolumeSnapshotContentName ?? "");

  // 4. Delete everything; nothing of these snapshots may stay behind, in the API or the driver.
  await steps.timed(
    "snapshots, restored claim and group deleted: DeleteSnapshot/DeleteVolumeGroupSnapshot, no content or backend snapshot left",
    async () => {
      await client.delete(GVR.pods, RESTORE_POD, { namespace: NAMESPACE });
      await steps.until("the restore pod to go", () =>
        gone(() => client.get(GVR.pods, RESTORE_POD, { namespace: NAMESPACE })),
      );
      await client.delete(GVR.volumeGroupSnapshots, GROUP, { namespace: NAMESPACE });
      await client.delete(GVR.volumeSnapshots, SNAPSHOT, { namespace: NAMESPACE });
      for (const member of members.members)
        await client
          .delete(GVR.volumeSnapshots, member.metadata?.name ?? "", { namespace: NAMESPACE })
          .catch((error: unknown) => {
            if (!isNotFound(error)) throw error;
          });
      await client.delete(GVR.persistentVolumeClaims, RESTORED, { namespace: NAMESPACE });
      await client.delete(GVR.persistentVolumeClaims, SECOND_CLAIM, { namespace: NAMESPACE });
      await steps.until("every VolumeSnapshotContent of these snapshots to go", async () => {
        for (const name of contents)
          if (!(await gone(() => client.get(GVR.volumeSnapshotContents, name)))) return false;
        return gone(() => client.get(GVR.volumeGroupSnapshotContents, groupContent));
      });
      await steps.until("the restored and the second claim's volumes to go", async () => {
        const claims = await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
          namespace: NAMESPACE,
        });
        return !claims.items.some((c) => c.metadata?.name === RESTORED || c.metadata?.name === SECOND_CLAIM);
      });
      const csi = CsiClient.connect(controllerSocket(cluster.plan), { timeoutMs: 30_000 });
      try {
        await steps.until("the driver to hold no snapshot of these volumes", async () => {
          for (const handle of handles) {
            const listed = await csi.controller.listSnapshots({ sourceVolumeId: handle });
            if (listed.entries.length > 0) return false;
          }
          return true;
        });
      } finally {
        csi.close();
      }
      await client.patch(
        GVR.persistentVolumeClaims,
        written.claim,
        { metadata: { labels: { [GROUP_LABEL]: null } } },
        { namespace: NAMESPACE },
      );
      await client.delete(GVR.volumeSnapshotClasses, SNAPSHOT_CLASS).catch(() => {});
      await client.delete(GVR.volumeGroupSnapshotClasses, GROUP_CLASS).catch(() => {});
    },
  );
  steps.print(`    driver ${driverName}: ListSnapshots finds nothing of ${handles.length} volumes`);
}
