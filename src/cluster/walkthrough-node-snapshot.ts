// The walkthrough's snapshot step on `up --distributed` (upstream's distributed snapshotting): the
// written claim is snapshotted with the default class; the snapshot-controller (run with
// --enable-distributed-snapshotting) labels the content managed-by the node whose driver instance
// holds the volume, and only that node's csi-snapshotter (--node-deployment) cuts it, through that
// instance. Then the snapshot is deleted and no content is left. A restore and a group snapshot
// are not part of it: each node's instance knows only its own volumes and snapshots. Skipped,
// saying why, when the driver does not offer CREATE_DELETE_SNAPSHOT.

import { GVR, LABELS, type VolumeSnapshot, type VolumeSnapshotContent } from "../api/index.ts";
import { CsiClient } from "../csi/index.ts";
import type { KubeObject } from "../kube/index.ts";
import type { RunningCluster } from "./cluster.ts";
import { nodeSocket, runsNodeSnapshotters } from "./components.ts";
import { gone, type SnapshotSteps, type WrittenClaim } from "./walkthrough-snapshots.ts";

const NAMESPACE = "default";
const SNAPSHOT = "walkthrough-node-snapshot";

/** Whether the step runs on this cluster: distributed, with a snapshotter per node. */
export function nodeSnapshotStepRuns(cluster: Pick<RunningCluster, "plan">): boolean {
  return runsNodeSnapshotters(cluster.plan);
}

async function driverSnapshots(cluster: RunningCluster): Promise<boolean> {
  const node = cluster.plan.nodes[0];
  if (node === undefined) return false;
  const csi = CsiClient.connect(nodeSocket(cluster.plan, node.name), { timeoutMs: 10_000 });
  try {
    return (await csi.controllerCapabilities()).has("CREATE_DELETE_SNAPSHOT");
  } finally {
    csi.close();
  }
}

const snapshotGone = (cluster: RunningCluster): Promise<true | undefined> =>
  gone(() => cluster.admin.get(GVR.volumeSnapshots, SNAPSHOT, { namespace: NAMESPACE }));

/** The step; see the header. Every wait is bounded by `steps.until`. */
export async function runNodeSnapshotStep(
  cluster: RunningCluster,
  steps: SnapshotSteps,
  written: Pick<WrittenClaim, "claim">,
): Promise<void> {
  const { admin: client } = cluster;
  if (!(await driverSnapshots(cluster))) {
    steps.print("    (no snapshot step: the driver does not offer CREATE_DELETE_SNAPSHOT)");
    return;
  }
  // An interrupted earlier run's snapshot would make the create fail.
  await client.delete(GVR.volumeSnapshots, SNAPSHOT, { namespace: NAMESPACE }).catch(() => {});
  await steps.until(`an earlier walkthrough's snapshot ${SNAPSHOT} to go`, () => snapshotGone(cluster));
  await client.create(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name: SNAPSHOT, namespace: NAMESPACE },
    // No class: the driver's default one (deploy/csi-hostpath-snapshotclass.yaml on up).
    spec: { source: { persistentVolumeClaimName: written.claim } },
  } as KubeObject);
  const content = await steps.timed(
    `VolumeSnapshot ${SNAPSHOT} of ${written.claim} readyToUse: CreateSnapshot by its node's snapshotter (--node-deployment)`,
    async () => {
      const snapshot = await steps.until("the snapshot to be ready", async () => {
        const s = await client.get<VolumeSnapshot & KubeObject>(GVR.volumeSnapshots, SNAPSHOT, {
          namespace: NAMESPACE,
        });
        return s.status?.readyToUse === true ? s : undefined;
      });
      return client.get<VolumeSnapshotContent & KubeObject>(
        GVR.volumeSnapshotContents,
        snapshot.status?.boundVolumeSnapshotContentName ?? "",
      );
    },
    (c) =>
      `content ${c.metadata?.name} managed-by ${c.metadata?.labels?.[LABELS.snapshotManagedBy.key] ?? "(none)"}`,
  );
  await client.delete(GVR.volumeSnapshots, SNAPSHOT, { namespace: NAMESPACE });
  await steps.timed(
    `snapshot deleted: DeleteSnapshot by the node's snapshotter, content ${content.metadata?.name} gone`,
    () =>
      steps.until("the snapshot and its content to go", async () => {
        if (!(await snapshotGone(cluster))) return undefined;
        return gone(() => client.get(GVR.volumeSnapshotContents, content.metadata?.name ?? ""));
      }),
  );
}
