// The PV binder against the real embedded API server: static binding by every matching rule,
// pre-binding either way, the dynamic provisioning handoff (Immediate and WaitForFirstConsumer,
// the test playing the provisioner), Released / reclaim, Recycle, Lost. Each test uses its own
// storage class names so the cluster-scoped volumes of one test never match another's claims.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ANNOTATIONS, GVR, type PersistentVolume, type PersistentVolumeClaim } from "../../api/index.ts";
import {
  DRIVER,
  NS,
  claimPhase,
  eventsFor,
  getOrUndefined,
  node,
  pod,
  pv,
  pvc,
  runLoops,
  sharedTestServer,
  storageClass,
  waitClaimBound,
  waitForEvent,
  waitVolumePhase,
} from "../../../test/harness/controllers.ts";
import { until } from "../../../test/harness/until.ts";

const shared = sharedTestServer(
  (server) => runLoops(server.client, { controllers: ["*", "-garbage-collector-controller"] }).stop,
);

async function createVolumes(...volumes: PersistentVolume[]): Promise<void> {
  for (const volume of volumes) await shared.client.create(GVR.persistentVolumes, volume);
  for (const volume of volumes) await waitVolumePhase(shared.client, volume.metadata.name!, "Available");
}

test("static binding: class and access-mode group first, then the smallest volume that fits", async () => {
  await createVolumes(
    pv("s1-a", { size: "1Gi", storageClassName: "s1" }), // too small
    pv("s1-b", { size: "5Gi", storageClassName: "s1" }),
    pv("s1-c", { size: "2Gi", storageClassName: "s2" }), // other class
    pv("s1-d", { size: "2Gi", storageClassName: "s1", accessModes: ["ReadWriteMany"] }), // lacks RWO
    pv("s1-e", { size: "2Gi", storageClassName: "s1", accessModes: ["ReadWriteOnce", "ReadOnlyMany"] }),
    pv("s1-f", { size: "3Gi", storageClassName: "s1" }),
  );
  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-s1-1", { size: "1500Mi", storageClassName: "s1" }),
  );
  const first = await waitClaimBound(shared.client, "c-s1-1");
  // The RWO-only group is tried before RWO+ROX; within it the smallest that fits (3Gi).
  assert.equal(first.spec?.volumeName, "s1-f");
  assert.equal(first.metadata?.annotations?.[ANNOTATIONS.bindCompleted.key], "yes");
  assert.equal(first.metadata?.annotations?.[ANNOTATIONS.boundByController.key], "yes");
  assert.deepEqual(first.status?.capacity, { storage: "3Gi" });
  assert.deepEqual(first.status?.accessModes, ["ReadWriteOnce"]);
  const volume = await waitVolumePhase(shared.client, "s1-f", "Bound");
  assert.equal(volume.spec?.claimRef?.uid, first.metadata?.uid);
  assert.equal(volume.spec?.claimRef?.kind, "PersistentVolumeClaim");
  assert.equal(volume.metadata?.annotations?.[ANNOTATIONS.boundByController.key], "yes");

  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-s1-2", { size: "1500Mi", storageClassName: "s1" }),
  );
  assert.equal((await waitClaimBound(shared.client, "c-s1-2")).spec?.volumeName, "s1-b");
  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-s1-3", { size: "1500Mi", storageClassName: "s1" }),
  );
  assert.equal((await waitClaimBound(shared.client, "c-s1-3")).spec?.volumeName, "s1-e");
  // Nothing left that fits: the class has no StorageClass object, so provisioning reports it.
  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-s1-4", { size: "1500Mi", storageClassName: "s1" }),
  );
  const failed = await waitForEvent(shared.client, "c-s1-4", "ProvisioningFailed");
  assert.equal(failed.message, 'storageclass.storage.k8s.io "s1" not found');
  assert.equal((await claimPhase(shared.client, "c-s1-4"))?.status?.phase, "Pending");
});

test("static binding: label selector and volumeMode", async () => {
  await createVolumes(
    pv("sel-gold", { size: "1Gi", storageClassName: "sel" }, { labels: { tier: "gold" } }),
    pv("sel-silver", { size: "2Gi", storageClassName: "sel" }, { labels: { tier: "silver" } }),
    pv(
      "sel-block",
      { size: "1Gi", storageClassName: "sel", volumeMode: "Block" },
      { labels: { tier: "silver" } },
    ),
  );
  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-sel", { storageClassName: "sel", selector: { matchLabels: { tier: "silver" } } }),
  );
  assert.equal((await waitClaimBound(shared.client, "c-sel")).spec?.volumeName, "sel-silver");
  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-sel-block", { storageClassName: "sel", volumeMode: "Block" }),
  );
  assert.equal((await waitClaimBound(shared.client, "c-sel-block")).spec?.volumeName, "sel-block");
  assert.equal(
    (await getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "sel-gold"))?.status?.phase,
    "Available",
  );
});

test("pre-bound volume (claimRef) wins over a better fit; the volume is not marked bound-by-controller", async () => {
  await createVolumes(
    pv("pre-small", { size: "1Gi", storageClassName: "pre" }),
    pv("pre-ref", { size: "4Gi", storageClassName: "pre", claimRef: { namespace: NS, name: "c-pre-ref" } }),
  );
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-pre-ref", { storageClassName: "pre" }));
  const claim = await waitClaimBound(shared.client, "c-pre-ref");
  assert.equal(claim.spec?.volumeName, "pre-ref");
  assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.boundByController.key], "yes");
  const volume = await waitVolumePhase(shared.client, "pre-ref", "Bound");
  assert.equal(volume.metadata?.annotations?.[ANNOTATIONS.boundByController.key], undefined);
  assert.equal(volume.spec?.claimRef?.uid, claim.metadata?.uid);
});

test("pre-bound claim (volumeName): bound when it fits, VolumeMismatch when it does not", async () => {
  await createVolumes(
    pv("vn-ok", { size: "1Gi", storageClassName: "vn" }),
    pv("vn-block", { size: "1Gi", storageClassName: "vn", volumeMode: "Block" }),
  );
  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-vn-ok", { storageClassName: "vn", volumeName: "vn-ok" }),
  );
  const claim = await waitClaimBound(shared.client, "c-vn-ok");
  assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.boundByController.key], undefined);
  const volume = await waitVolumePhase(shared.client, "vn-ok", "Bound");
  assert.equal(volume.metadata?.annotations?.[ANNOTATIONS.boundByController.key], "yes");

  await shared.client.create(
    GVR.persistentVolumeClaims,
    pvc("c-vn-block", { storageClassName: "vn", volumeName: "vn-block" }),
  );
  const mismatch = await waitForEvent(shared.client, "c-vn-block", "VolumeMismatch");
  assert.equal(mismatch.type, "Warning");
  assert.equal(mismatch.message, 'Cannot bind to requested volume "vn-block": incompatible volumeMode');
  assert.equal((await claimPhase(shared.client, "c-vn-block"))?.status?.phase, "Pending");
  assert.equal(
    (await getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "vn-block"))?.spec
      ?.claimRef,
    undefined,
  );
});

/** What the external provisioner does: a volume whose claimRef points at the claim. */
async function provisionFor(
  claim: PersistentVolumeClaim,
  name: string,
  reclaim: "Delete" | "Retain",
): Promise<void> {
  await shared.client.create(
    GVR.persistentVolumes,
    pv(
      name,
      {
        storageClassName: claim.spec?.storageClassName ?? "",
        persistentVolumeReclaimPolicy: reclaim,
        claimRef: {
          kind: "PersistentVolumeClaim",
          apiVersion: "v1",
          namespace: NS,
          name: claim.metadata.name!,
          uid: claim.metadata.uid!,
        },
      },
      { annotations: { [ANNOTATIONS.provisionedBy.key]: DRIVER } },
    ),
  );
}

test("dynamic, Immediate: provisioner annotations and ExternalProvisioning; the provisioned volume binds; Delete waits for the provisioner", async () => {
  await shared.client.create(GVR.storageClasses, storageClass("dyn-imm"));
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-dyn", { storageClassName: "dyn-imm" }));
  const event = await waitForEvent(shared.client, "c-dyn", "ExternalProvisioning");
  assert.equal(
    event.message,
    `Waiting for a volume to be created either by the external provisioner '${DRIVER}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`,
  );
  assert.equal(event.source.component, "persistentvolume-controller");
  const claim = (await claimPhase(shared.client, "c-dyn"))!;
  assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.storageProvisioner.key], DRIVER);
  assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.betaStorageProvisioner.key], DRIVER);

  await provisionFor(claim, "pvc-dyn", "Delete");
  assert.equal((await waitClaimBound(shared.client, "c-dyn")).spec?.volumeName, "pvc-dyn");
  await waitVolumePhase(shared.client, "pvc-dyn", "Bound");

  // The claim goes (no pod uses it, so pvc-protection lets it): Released, and the volume is left
  // to the provisioner that made it (no Failed, no Event from us).
  await shared.client.delete(GVR.persistentVolumeClaims, "c-dyn", { namespace: NS });
  await until(async () => (await claimPhase(shared.client, "c-dyn")) === undefined, "claim c-dyn gone");
  const released = await waitVolumePhase(shared.client, "pvc-dyn", "Released");
  assert.ok(released.spec?.claimRef, "a Released volume keeps its claimRef");
  assert.deepEqual(
    (await eventsFor(shared.client, "pvc-dyn")).map((e) => e.reason),
    [],
  );
});

test("reclaim: Retain stays Released; Delete without a provisioner and Recycle fail the volume with an Event", async () => {
  await createVolumes(
    pv("rc-retain", { storageClassName: "rc-retain" }),
    pv("rc-delete", { storageClassName: "rc-delete", persistentVolumeReclaimPolicy: "Delete" }),
    pv("rc-recycle", { storageClassName: "rc-recycle", persistentVolumeReclaimPolicy: "Recycle" }),
  );
  for (const name of ["retain", "delete", "recycle"]) {
    await shared.client.create(
      GVR.persistentVolumeClaims,
      pvc(`c-rc-${name}`, { storageClassName: `rc-${name}` }),
    );
    await waitClaimBound(shared.client, `c-rc-${name}`);
    await shared.client.delete(GVR.persistentVolumeClaims, `c-rc-${name}`, { namespace: NS });
  }
  await waitVolumePhase(shared.client, "rc-retain", "Released");
  const deleteFailed = await waitForEvent(shared.client, "rc-delete", "VolumeFailedDelete");
  assert.equal(
    deleteFailed.message,
    'error getting deleter volume plugin for volume "rc-delete": no deletable volume plugin matched',
  );
  await waitVolumePhase(shared.client, "rc-delete", "Failed");
  const recycleFailed = await waitForEvent(shared.client, "rc-recycle", "VolumeFailedRecycle");
  assert.equal(recycleFailed.type, "Warning");
  assert.equal(recycleFailed.message, "No recycler plugin found for the volume!");
  await waitVolumePhase(shared.client, "rc-recycle", "Failed");
  // Retain: still Released after the failures above were handled (the same resync pass saw it).
  assert.equal(
    (await getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "rc-retain"))?.status
      ?.phase,
    "Released",
  );
});

test("WaitForFirstConsumer: waits (WaitForFirstConsumer, then WaitForPodScheduled), hands off after selected-node, binds the provisioned volume", async () => {
  await shared.client.create(
    GVR.storageClasses,
    storageClass("dyn-wffc", { volumeBindingMode: "WaitForFirstConsumer" }),
  );
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-wffc", { storageClassName: "dyn-wffc" }));
  const waiting = await waitForEvent(shared.client, "c-wffc", "WaitForFirstConsumer");
  assert.equal(waiting.message, "waiting for first consumer to be created before binding");
  assert.equal(
    (await claimPhase(shared.client, "c-wffc"))?.metadata?.annotations?.[ANNOTATIONS.storageProvisioner.key],
    undefined,
  );
  await shared.client.create(GVR.pods, pod("p-wffc", "c-wffc"));
  const podWait = await waitForEvent(shared.client, "c-wffc", "WaitForPodScheduled");
  assert.equal(podWait.message, "waiting for pod p-wffc to be scheduled");

  // The scheduler's part: pick a node.
  await shared.client.patch(
    GVR.persistentVolumeClaims,
    "c-wffc",
    { metadata: { annotations: { [ANNOTATIONS.selectedNode.key]: "n-wffc" } } },
    { namespace: NS },
  );
  const handedOff = await until(async () => {
    const claim = await claimPhase(shared.client, "c-wffc");
    return claim?.metadata?.annotations?.[ANNOTATIONS.storageProvisioner.key] === DRIVER ? claim : undefined;
  }, "storage-provisioner annotation after selected-node");
  await provisionFor(handedOff, "pvc-wffc", "Delete");
  assert.equal((await waitClaimBound(shared.client, "c-wffc")).spec?.volumeName, "pvc-wffc");
});

test("WaitForFirstConsumer with selected-node binds a static volume whose node affinity fits that node", async () => {
  await shared.client.create(
    GVR.storageClasses,
    storageClass("local-wffc", {
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "WaitForFirstConsumer",
    }),
  );
  await shared.client.create(GVR.nodes, node("n-zone-b", { "topology.example/zone": "b" }));
  const inZone = (zone: string) => ({
    required: {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: "topology.example/zone", operator: "In" as const, values: [zone] }] },
      ],
    },
  });
  await createVolumes(
    pv("wf-a", { size: "1Gi", storageClassName: "local-wffc", nodeAffinity: inZone("a") }),
    pv("wf-b", { size: "2Gi", storageClassName: "local-wffc", nodeAffinity: inZone("b") }),
  );
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-wf", { storageClassName: "local-wffc" }));
  await waitForEvent(shared.client, "c-wf", "WaitForFirstConsumer");
  assert.equal(
    (await getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "wf-a"))?.spec?.claimRef,
    undefined,
  );
  await shared.client.patch(
    GVR.persistentVolumeClaims,
    "c-wf",
    { metadata: { annotations: { [ANNOTATIONS.selectedNode.key]: "n-zone-b" } } },
    { namespace: NS },
  );
  assert.equal((await waitClaimBound(shared.client, "c-wf")).spec?.volumeName, "wf-b");
});

test("Lost: a bound claim whose volume disappears is Lost with ClaimLost", async () => {
  await createVolumes(pv("lost-v", { storageClassName: "lost" }));
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-lost", { storageClassName: "lost" }));
  await waitClaimBound(shared.client, "c-lost");
  // Force the volume away past pv-protection (as an admin removing the finalizer would).
  await shared.client.patch(GVR.persistentVolumes, "lost-v", { metadata: { finalizers: null } });
  await shared.client.delete(GVR.persistentVolumes, "lost-v");
  await until(
    async () => (await claimPhase(shared.client, "c-lost"))?.status?.phase === "Lost",
    "claim Lost",
  );
  const lost = await waitForEvent(shared.client, "c-lost", "ClaimLost");
  assert.equal(lost.message, "Bound claim has lost its PersistentVolume. Data on the volume is lost!");
});
