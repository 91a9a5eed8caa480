// pvc-protection and pv-protection against the real API server (the admission plugin adds the
// finalizers, the controllers remove them): a claim used by a scheduled pod outlives its
// delete until the pod is gone; a bound volume outlives its delete until its claim is gone.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  FINALIZERS,
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../api/index.ts";
import {
  NS,
  claimPhase,
  getOrUndefined,
  pod,
  pv,
  pvc,
  runLoops,
  sharedTestServer,
  waitClaimBound,
  waitVolumePhase,
} from "../../../test/harness/controllers.ts";
import { until } from "../../../test/harness/until.ts";

const shared = sharedTestServer(
  (server) => runLoops(server.client, { controllers: ["*", "-garbage-collector-controller"] }).stop,
);

test("pvc-protection: a claim used by a scheduled pod stays Terminating until the pod is deleted", async () => {
  await shared.client.create(GVR.persistentVolumes, pv("prot-v", { storageClassName: "prot" }));
  await waitVolumePhase(shared.client, "prot-v", "Available");
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-prot", { storageClassName: "prot" }));
  await waitClaimBound(shared.client, "c-prot");
  await shared.client.create(GVR.pods, pod("p-running", "c-prot", "node-1"));
  // An unscheduled pod does not count (the kubelet would refuse to start it).
  await shared.client.create(GVR.pods, pod("p-pending", "c-prot"));

  await shared.client.delete(GVR.persistentVolumeClaims, "c-prot", { namespace: NS });
  const terminating = await until(async () => {
    const claim = await claimPhase(shared.client, "c-prot");
    return claim?.metadata?.deletionTimestamp ? claim : undefined;
  }, "claim Terminating");
  assert.deepEqual(terminating.metadata?.finalizers, [FINALIZERS.pvcProtection.key]);

  // pv-protection: the bound volume, deleted too, stays while Bound.
  await shared.client.delete(GVR.persistentVolumes, "prot-v");
  const volume = await until(
    async () => getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "prot-v"),
    "volume still there",
  );
  assert.ok(volume.metadata?.deletionTimestamp);
  assert.deepEqual(volume.metadata?.finalizers, [FINALIZERS.pvProtection.key]);

  // By now the claim's delete has been reconciled (the volume's came after it): still held.
  assert.ok((await claimPhase(shared.client, "c-prot"))?.metadata?.deletionTimestamp, "claim in use is kept");

  // The running pod finishes and goes away: the claim goes, the volume is Released, then goes.
  await shared.client.request({
    method: "DELETE",
    path: `/api/v1/namespaces/${NS}/pods/p-running`,
    body: { gracePeriodSeconds: 0 },
  });
  await until(
    async () => (await getOrUndefined<Pod>(shared.client, GVR.pods, "p-running", NS)) === undefined,
    "pod gone",
  );
  await until(async () => (await claimPhase(shared.client, "c-prot")) === undefined, "claim removed");
  await until(
    async () =>
      (await getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "prot-v")) === undefined,
    "volume removed once Released",
  );
});

test("pvc-protection: a claim no pod uses is removed at once; the finalizer is put back on claims that lack it", async () => {
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-free", { storageClassName: "none-free" }));
  await shared.client.delete(GVR.persistentVolumeClaims, "c-free", { namespace: NS });
  await until(async () => (await claimPhase(shared.client, "c-free")) === undefined, "unused claim removed");

  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-bare", { storageClassName: "none-bare" }));
  await shared.client.patch(
    GVR.persistentVolumeClaims,
    "c-bare",
    { metadata: { finalizers: null } },
    { namespace: NS },
  );
  await until(async () => {
    const claim: PersistentVolumeClaim | undefined = await claimPhase(shared.client, "c-bare");
    return claim?.metadata?.finalizers?.includes(FINALIZERS.pvcProtection.key);
  }, "finalizer added back");
});

test("protection with CSI migration: an in-tree (migrated) PV and its claim are protected like CSI ones", async () => {
  const { csi: _csi, ...spec } = pv("prot-gce", { storageClassName: "prot-gce" }).spec ?? {};
  await shared.client.create(GVR.persistentVolumes, {
    ...pv("prot-gce"),
    spec: { ...spec, gcePersistentDisk: { pdName: "disk-prot" } },
  });
  await waitVolumePhase(shared.client, "prot-gce", "Available");
  await shared.client.create(GVR.persistentVolumeClaims, pvc("c-gce", { storageClassName: "prot-gce" }));
  await waitClaimBound(shared.client, "c-gce");
  await shared.client.create(GVR.pods, pod("p-gce", "c-gce", "node-1"));
  await shared.client.delete(GVR.persistentVolumeClaims, "c-gce", { namespace: NS });
  const terminating = await until(async () => {
    const claim = await claimPhase(shared.client, "c-gce");
    return claim?.metadata?.deletionTimestamp ? claim : undefined;
  }, "claim Terminating");
  assert.deepEqual(terminating.metadata?.finalizers, [FINALIZERS.pvcProtection.key]);
  await shared.client.delete(GVR.persistentVolumes, "prot-gce");
  const volume = await until(
    async () => getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "prot-gce"),
    "volume still there",
  );
  assert.deepEqual(volume.metadata?.finalizers, [FINALIZERS.pvProtection.key]);
  assert.equal(volume.spec?.csi, undefined, "still in-tree");
  await shared.client.request({
    method: "DELETE",
    path: `/api/v1/namespaces/${NS}/pods/p-gce`,
    body: { gracePeriodSeconds: 0 },
  });
  await until(async () => (await claimPhase(shared.client, "c-gce")) === undefined, "claim removed");
  await until(
    async () =>
      (await getOrUndefined<PersistentVolume>(shared.client, GVR.persistentVolumes, "prot-gce")) ===
      undefined,
    "volume removed once Released",
  );
});
