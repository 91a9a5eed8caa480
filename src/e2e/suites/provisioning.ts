// Upstream's provisioning suite (test/e2e/storage/testsuites/provisioning.go): a dynamically
// provisioned volume is the driver's, of the test's class, at least the size asked, carries the
// class's mount options, and holds data through pods; a volume provisioned from a snapshot or
// cloned from a claim (one or several at once) holds the source's data; a second PV with the
// same volume handle as the first mounts next to it on the same node and shows the same data.

import { GVR, type PersistentVolume } from "../../api/index.ts";
import type { SuiteImplementation, TestContext } from "../suite.ts";
import { E2eCheckError } from "../model.ts";
import { TestNamespace } from "../resources.ts";
import {
  checkProvisionedVolume,
  podVolume,
  randomContent,
  writeData,
  expectData,
  locationOf,
} from "./checks.ts";
import {
  cloneClaim,
  createSnapshot,
  createSnapshotClass,
  nameOf,
  restoreClaim,
  sourceWithData,
  type SourceVolume,
} from "./data-sources.ts";
import { anyVolumeDataSource } from "./populator.ts";

/** Provisions with the class options, checks the PV, writes and reads data (one pod binds a delayed claim). */
async function provisionAndCheck(context: TestContext, mountOptions: readonly string[]): Promise<void> {
  const { namespace, driver } = context;
  const volume = await namespace.createVolume({ class: { mountOptions } });
  const content = randomContent();
  const writer = await namespace.runPod({ volumes: [podVolume(volume)] });
  const node = (await namespace.getPod(writer)).spec?.nodeName ?? "";
  await writeData(namespace, writer, locationOf(volume), content);
  const pv = await namespace.waitBound(volume.claimName ?? "");
  checkProvisionedVolume(pv, driver, volume.className ?? "", namespace.claimSize);
  const onVolume = pv.spec?.mountOptions ?? [];
  const missing = mountOptions.filter((option) => !onVolume.includes(option));
  if (missing.length > 0)
    throw new E2eCheckError(
      `PV ${pv.metadata?.name} lacks the class's mount options ${missing.join(",")} (has ${onVolume.join(",") || "none"})`,
    );
  await namespace.deletePod(writer);
  const reader = await namespace.runPod({ volumes: [podVolume(volume)], node });
  await expectData(namespace, reader, locationOf(volume), content);
}

/**
 * A claim made from the source (restored or cloned) holds its data, read by a pod on the source's
 * node, and is provisioned as checkProvisioning wants; then it is deleted and, with policy
 * Delete, its PV awaited gone (upstream's TestDynamicProvisioning).
 */
async function checkDerivedClaim(
  context: TestContext,
  source: SourceVolume,
  claimName: string,
  deleteAfter: boolean,
): Promise<void> {
  const { namespace, driver } = context;
  const derived = { block: source.block };
  const reader = await namespace.runPod({
    volumes: [TestNamespace.claimVolume(claimName, { block: source.block })],
    node: source.node,
  });
  await expectData(namespace, reader, locationOf(derived), source.content);
  const pv = await namespace.waitBound(claimName);
  checkProvisionedVolume(pv, driver, source.className, namespace.claimSize);
  const claim = await namespace.getClaim(claimName);
  const wantMode = claim.spec?.volumeMode;
  if (wantMode !== undefined && pv.spec?.volumeMode !== wantMode)
    throw new E2eCheckError(
      `PV ${pv.metadata?.name} has volume mode ${pv.spec?.volumeMode}, the claim ${wantMode}`,
    );
  if (!deleteAfter) return;
  await namespace.deletePod(reader);
  await namespace.deleteAndWait(GVR.persistentVolumeClaims, claimName, namespace.name);
  if (pv.spec?.persistentVolumeReclaimPolicy === "Delete")
    await namespace.waitGone(GVR.persistentVolumes, pv.metadata?.name ?? "");
}

async function snapshotDataSource(context: TestContext): Promise<void> {
  const { namespace, driver } = context;
  const source = await sourceWithData(namespace);
  const snapshotClass = await createSnapshotClass(namespace, driver);
  const snapshot = await createSnapshot(namespace, source.claimName, nameOf(snapshotClass));
  const restored = await restoreClaim(namespace, source.className, nameOf(snapshot));
  await checkDerivedClaim(context, source, nameOf(restored), false);
}

async function pvcDataSource(context: TestContext, clones: number): Promise<void> {
  const { namespace } = context;
  const source = await sourceWithData(namespace);
  await Promise.all(
    Array.from({ length: clones }, async () => {
      const clone = await cloneClaim(namespace, source.className, source.claimName);
      await checkDerivedClaim(context, source, nameOf(clone), clones > 1);
    }),
  );
}

/**
 * upstream's MultiplePVMountSingleNodeCheck: a second PV copies the first one's CSI source
 * (same volume handle), is bound to a second claim, and a pod of each claim runs on the same
 * node at once; data written through the first shows through the second.
 */
async function multiplePVsSameStorage(context: TestContext): Promise<void> {
  const { namespace } = context;
  const volume = await namespace.createVolume();
  const where = locationOf(volume);
  const first = await namespace.runPod({ volumes: [podVolume(volume)] });
  const node = (await namespace.getPod(first)).spec?.nodeName ?? "";
  const pv = await namespace.waitBound(volume.claimName ?? "");
  const spec = pv.spec;
  if (spec?.csi === undefined) throw new E2eCheckError(`PV ${pv.metadata?.name} has no CSI source`);
  const copyName = namespace.clusterName("pv");
  await namespace.createObject<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: copyName },
    spec: {
      ...(spec.capacity ? { capacity: spec.capacity } : {}),
      ...(spec.accessModes ? { accessModes: spec.accessModes } : {}),
      csi: spec.csi,
      // Retain: deleting the copy must never delete the storage the first PV still owns.
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: volume.className ?? "",
      ...(spec.volumeMode ? { volumeMode: spec.volumeMode } : {}),
      ...(spec.nodeAffinity ? { nodeAffinity: spec.nodeAffinity } : {}),
      ...(spec.mountOptions ? { mountOptions: spec.mountOptions } : {}),
    },
  });
  const claim = await namespace.createClaim(volume.className ?? "", {
    volumeName: copyName,
    size: spec.capacity?.storage ?? namespace.claimSize,
  });
  const claimName = nameOf(claim);
  await namespace.waitBound(claimName);
  const second = await namespace.runPod({ volumes: [TestNamespace.claimVolume(claimName)], node });
  const content = randomContent("first PV");
  await writeData(namespace, first, where, content);
  await expectData(namespace, second, where, content);
  const back = randomContent("second PV");
  await writeData(namespace, second, where, back, "back");
  await expectData(namespace, first, where, back, "back");
}

export const provisioningTests: SuiteImplementation = {
  suite: "provisioning",
  tests: {
    "should provision storage with mount options": (context) =>
      provisionAndCheck(context, [
        ...(context.driver.DriverInfo.SupportedMountOption ?? []),
        ...(context.driver.DriverInfo.RequiredMountOption ?? []),
      ]),
    "should provision storage with snapshot data source": snapshotDataSource,
    "should provision storage with pvc data source": (context) => pvcDataSource(context, 1),
    "should provision storage with pvc data source in parallel": (context) => pvcDataSource(context, 5),
    "should mount multiple PV pointing to the same storage on the same node": multiplePVsSameStorage,
    "should provision storage with any volume data source": anyVolumeDataSource,
  },
};
