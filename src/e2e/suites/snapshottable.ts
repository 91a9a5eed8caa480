// Upstream's snapshottable suite (test/e2e/storage/testsuites/snapshottable.go): data written to
// a volume is snapshotted (dynamically, or re-imported as a pre-provisioned snapshot), the
// snapshot's and content's fields are checked, the source is changed afterwards, a claim restored
// from the snapshot holds the data as it was, and deleting the snapshot deletes its content or
// keeps it, per the deletion policy. The ephemeral variant snapshots a generic ephemeral volume's
// claim while its pod exists and restores into another generic ephemeral volume.

import type { PersistentVolumeClaim } from "../../api/index.ts";
import { GVR, ephemeralClaimName } from "../../api/index.ts";
import { E2eCheckError } from "../model.ts";
import type { SuiteImplementation, TestContext } from "../suite.ts";
import { TestNamespace } from "../resources.ts";
import { expectData, locationOf, podVolume, writeData } from "./checks.ts";
import {
  SNAPSHOT_API_GROUP,
  checkSnapshot,
  checkSnapshotDeletion,
  cleanupSnapshotResource,
  createSnapshotResource,
  deleteSnapshotNoWait,
  waitVolumeNotInUse,
  type SnapshotResource,
} from "./snapshots.ts";

const snapshotSource = (name: string): NonNullable<PersistentVolumeClaim["spec"]>["dataSource"] => ({
  apiGroup: SNAPSHOT_API_GROUP,
  kind: "VolumeSnapshot",
  name,
});

async function persistent(context: TestContext): Promise<void> {
  const { namespace, pattern } = context;
  const volume = await namespace.createVolume();
  const claimName = volume.claimName ?? "";
  const where = locationOf(volume);
  const original = `hello from ${namespace.name} namespace\n`;
  const writer = await namespace.runPod({ volumes: [podVolume(volume)] });
  await writeData(namespace, writer, where, original);
  const node = (await namespace.getPod(writer)).spec?.nodeName ?? "";
  const pv = await namespace.waitBound(claimName);
  const claim = await namespace.getClaim(claimName);
  await namespace.deletePod(writer);
  await waitVolumeNotInUse(namespace, node, pv.spec?.csi?.volumeHandle ?? "");

  let resource: SnapshotResource | undefined;
  try {
    resource = await createSnapshotResource(context, claimName);
    const content = await checkSnapshot(namespace, resource, pattern);

    // The source changes after the snapshot: the restore must still show the original.
    const modifier = await namespace.runPod({ volumes: [podVolume(volume)] });
    await writeData(namespace, modifier, where, `modified data from ${namespace.name} namespace\n`);
    await namespace.deletePod(modifier);

    const restored = await namespace.createClaim(volume.className ?? "", {
      size: claim.spec?.resources?.requests?.storage ?? namespace.claimSize,
      dataSource: snapshotSource(resource.snapshot.metadata?.name ?? "")!,
    });
    const restoredName = restored.metadata?.name ?? "";
    const reader = await namespace.runPod({ volumes: [TestNamespace.claimVolume(restoredName)] });
    await expectData(namespace, reader, where, original);

    // The snapshot, the pod and the claim restored from it go at the same time (drivers differ
    // in which order they allow).
    await deleteSnapshotNoWait(namespace, resource.snapshot.metadata?.name ?? "");
    await namespace.deletePod(reader, { wait: false });
    await namespace.client.delete(GVR.persistentVolumeClaims, restoredName, { namespace: namespace.name });
    await checkSnapshotDeletion(namespace, resource, content, pattern.snapshotDeletionPolicy);
  } finally {
    await cleanupSnapshotResource(namespace, resource);
  }
}

async function ephemeral(context: TestContext): Promise<void> {
  const { namespace, pattern } = context;
  const volume = await namespace.createVolume();
  const where = locationOf(volume);
  const created = await namespace.createPod({
    volumes: [podVolume(volume)],
    command: `echo 'hello from ${namespace.name} namespace' > ${where.path}/data; sync`,
  });
  const podName = created.metadata?.name ?? "";
  const ended = await namespace.waitEnded(podName);
  if (ended.status?.phase !== "Succeeded")
    throw new E2eCheckError(`pod ${podName} ended ${ended.status?.phase}: ${ended.status?.message ?? ""}`);
  // The claim lives as long as its (ended, not deleted) pod: it can be snapshotted.
  const claimName = ephemeralClaimName(ended, { name: "volume1" });

  let resource: SnapshotResource | undefined;
  try {
    resource = await createSnapshotResource(context, claimName);
    const claim = await namespace.getClaim(claimName);
    await namespace.waitBound(claimName);
    const content = await checkSnapshot(namespace, resource, pattern);

    // Restored into another generic ephemeral volume; with no consistency guarantee for an
    // online snapshot, only that it starts is checked (as upstream).
    const restoredSpec = namespace.claimSpec(volume.className ?? "", {
      size: claim.spec?.resources?.requests?.storage ?? namespace.claimSize,
      dataSource: snapshotSource(resource.snapshot.metadata?.name ?? "")!,
    });
    const reader = await namespace.runPod({
      volumes: [
        { source: { ephemeral: { volumeClaimTemplate: { spec: restoredSpec } } }, block: volume.block },
      ],
    });

    await deleteSnapshotNoWait(namespace, resource.snapshot.metadata?.name ?? "");
    await namespace.deletePod(reader, { wait: false });
    await checkSnapshotDeletion(namespace, resource, content, pattern.snapshotDeletionPolicy);
  } finally {
    await cleanupSnapshotResource(namespace, resource);
  }
}

export const snapshottableTests: SuiteImplementation = {
  suite: "snapshottable",
  tests: {
    "should check snapshot fields, check restore correctly works after modifying source data, check deletion (persistent)":
      persistent,
    "should check snapshot fields, check restore correctly works, check deletion (ephemeral)": ephemeral,
  },
};
