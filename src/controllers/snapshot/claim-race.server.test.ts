// The source claim deleted around the content's creation, placed deterministically: the API
// server holds the controller's create of the content (a fault-injector hold, no timing), the
// claim is deleted inside that window, and a marker claim proves the controller's claim queue
// has decided on the deleted claim before the create is let go (one worker per queue: the
// marker's key is handled after the deleted claim's). Upstream keeps a claim while any unready
// snapshot names it, so its content is cut from a claim that still exists; csikit must too,
// and still release the claim (and leave no content nor finalizer behind) once it is cut. A
// claim already being deleted when the snapshot comes gets no content: the snapshot carries
// upstream's error status and Event.

import assert from "node:assert/strict";
import { test } from "node:test";
import { FINALIZERS, GVR, type PersistentVolumeClaim } from "../../api/index.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import {
  boundClaim,
  createClass,
  createSnapshot,
  eventReasons,
  getContent,
  getSnapshot,
  gone,
  runController,
  setup,
  untilReady,
} from "../../../test/harness/snapshot-controller.ts";
import { until } from "../../../test/harness/until.ts";

const PVC_FINALIZER = FINALIZERS.pvcAsSource.key;
/** A finalizer of nobody's: keeps a deleted claim around, being deleted, until the test drops it. */
const TEST_FINALIZER = "csikit.test/keep";

const getClaim = (f: Awaited<ReturnType<typeof setup>>, name: string) =>
  f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, name, { namespace: "default" });

test("claim deleted between the controller's check and the content create: kept until cut, then released, nothing left", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  await boundClaim(f.admin, "data");
  await boundClaim(f.admin, "marker");
  f.sidecar.ready = false; // cut, not ready: the claim must stay protected meanwhile
  const held = f.cluster.faults.holdNext({ verb: "create", resource: "volumesnapshotcontents" });
  defer(t, () => held.release());
  let reached = false;
  void held.reached.then(() => (reached = true));
  runController(t, f, ["--worker-threads=1"]);
  const snapshot = await createSnapshot(f.admin, "snap", { claim: "data" }, "csi-snapclass");
  await until(() => reached, "the controller's content create reaching the API server");
  assert.ok(
    (await getClaim(f, "data")).metadata?.finalizers?.includes(PVC_FINALIZER),
    "the claim was protected before the create",
  );

  // Inside the window: the claim is deleted, and the claim queue decides on it.
  await f.admin.delete(GVR.persistentVolumeClaims, "data", { namespace: "default" });
  const marker = await getClaim(f, "marker");
  await f.admin.update(GVR.persistentVolumeClaims, {
    ...marker,
    metadata: { ...marker.metadata, finalizers: [PVC_FINALIZER] },
  });
  await until(
    async () => !(await getClaim(f, "marker")).metadata?.finalizers?.includes(PVC_FINALIZER),
    "the claim queue reaching the marker (no snapshot needs it: released)",
  );
  // Released here, the claim would be gone before its content exists (only pvc-protection left).
  const during = await getClaim(f, "data");
  assert.ok(during.metadata?.deletionTimestamp, "being deleted");
  assert.ok(
    during.metadata?.finalizers?.includes(PVC_FINALIZER),
    "still protected: its content is in flight",
  );

  // The create goes on: the content is cut from the kept claim; once ready, the claim goes.
  held.release();
  const contentName = `snapcontent-${snapshot.metadata.uid!}`;
  await until(
    () =>
      getContent(f.admin, contentName).then(
        () => true,
        () => false,
      ),
    "the content created",
  );
  assert.ok((await getClaim(f, "data")).metadata?.finalizers?.includes(PVC_FINALIZER), "kept while cut");
  f.sidecar.ready = true;
  await untilReady(f.admin, "snap");
  // (kubernetes.io/pvc-protection, which the API server's admission adds, is the
  // pvc-protection controller's to remove; none runs here.)
  await until(
    async () => !(await getClaim(f, "data")).metadata?.finalizers?.includes(PVC_FINALIZER),
    "the deleted claim released",
  );
  assert.equal((await getContent(f.admin, contentName)).spec.volumeSnapshotRef.uid, snapshot.metadata.uid);

  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  await until(() => gone(() => getSnapshot(f.admin, "snap")), "snapshot gone");
  await until(() => gone(() => getContent(f.admin, contentName)), "content gone");
  assert.equal(f.sidecar.backend.size, 0, "the backend snapshot was deleted");
});

test("a claim already being deleted gets no content: upstream's error status and Event, the claim released", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  const claim = await boundClaim(f.admin, "data");
  await f.admin.update(GVR.persistentVolumeClaims, {
    ...claim,
    metadata: { ...claim.metadata, finalizers: [TEST_FINALIZER] },
  });
  await f.admin.delete(GVR.persistentVolumeClaims, "data", { namespace: "default" });
  runController(t, f);
  const snapshot = await createSnapshot(f.admin, "snap", { claim: "data" }, "csi-snapclass");
  const failed = await until(async () => {
    const s = await getSnapshot(f.admin, "snap");
    return s.status?.error?.message ? s : undefined;
  }, "the snapshot's error status");
  assert.match(
    failed.status?.error?.message ?? "",
    /^Failed to create snapshot content with error snapshot controller failed to update data on API server: cannot add finalizer on claim because it is being deleted$/,
  );
  assert.equal(failed.status?.readyToUse, false);
  await until(
    async () => (await eventReasons(f.admin, "snap")).includes("SnapshotContentCreationFailed"),
    "the Warning Event",
  );
  assert.ok(await gone(() => getContent(f.admin, `snapcontent-${snapshot.metadata.uid!}`)), "no content");
  assert.ok(!(await getClaim(f, "data")).metadata?.finalizers?.includes(PVC_FINALIZER), "not protected");

  // The claim's other finalizers gone (the test's, and pvc-protection: no pod uses it), it goes;
  // the snapshot is deleted with no finalizer stuck.
  const deleting = await getClaim(f, "data");
  await f.admin.update(GVR.persistentVolumeClaims, {
    ...deleting,
    metadata: { ...deleting.metadata, finalizers: [] },
  });
  await until(() => gone(() => getClaim(f, "data")), "the claim gone");
  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  await until(() => gone(() => getSnapshot(f.admin, "snap")), "snapshot gone");
  assert.equal(f.sidecar.cut.length, 0, "nothing was cut");
});
