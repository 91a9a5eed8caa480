// End to end with the real sidecar: `csikit snapshot-controller` and `csikit snapshotter`, each
// under its own ServiceAccount and Role, against csikit's hostpath driver over real gRPC. A snapshot of a
// hostpath volume becomes readyToUse through a real CreateSnapshot; deleting it runs a real
// DeleteSnapshot, and nothing is left: no VolumeSnapshot, no content, no backend snapshot, no
// claim finalizer.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FINALIZERS, GVR, type PersistentVolumeClaim } from "../../api/index.ts";
import { connect } from "../../../test/harness/csi.ts";
import { startHostpath } from "../../../test/harness/provisioner.ts";
import { runSnapshotter } from "../../../test/harness/snapshotter.ts";
import { forbidden } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";
import {
  boundClaim,
  createClass,
  createSnapshot,
  getContent,
  getSnapshot,
  gone,
  runController,
  setup,
} from "../../../test/harness/snapshot-controller.ts";

test("with csikit snapshotter and hostpath: ready through CreateSnapshot, deleted through DeleteSnapshot, nothing left", async (t) => {
  const f = await setup(t, { standIn: false });
  const hostpath = await startHostpath(t, f.cluster.dir);
  const csi = connect(t, hostpath.path);
  const volume = await csi.controller.createVolume({
    name: "vol-e2e",
    capacityRange: { requiredBytes: String(1024 * 1024) },
    volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
  });
  await boundClaim(f.admin, "data", { volumeHandle: volume.volume!.volumeId });
  await createClass(f.admin, "hostpath", { deletionPolicy: "Delete" });
  runController(t, f);
  // The sidecar too under its own ServiceAccount and Role (deploy/rbac/csi-snapshotter.yaml).
  const sidecarKubeconfig = await f.cluster.componentKubeconfig("snapshotter", {
    kind: "serviceAccount",
    namespace: "default",
    name: "csi-snapshotter",
  });
  runSnapshotter(t, { kubeconfig: sidecarKubeconfig }, hostpath.path);
  const created = await createSnapshot(f.admin, "snap", { claim: "data" }, "hostpath");
  const ready = await until(
    async () => {
      const snapshot = await getSnapshot(f.admin, "snap");
      return snapshot.status?.readyToUse === true ? snapshot : undefined;
    },
    "ready through the real sidecar",
    { timeoutMs: 60_000 },
  );
  assert.equal(ready.status?.boundVolumeSnapshotContentName, `snapcontent-${created.metadata.uid!}`);
  const content = await getContent(f.admin, `snapcontent-${created.metadata.uid!}`);
  const handle = content.status?.snapshotHandle;
  assert.ok(handle, "the driver's snapshot handle");
  const listed = await csi.controller.listSnapshots({ snapshotId: handle });
  assert.equal(listed.entries?.length, 1, "the backend snapshot exists");
  await until(async () => {
    const claim = await f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", {
      namespace: "default",
    });
    return !(claim.metadata?.finalizers ?? []).includes(FINALIZERS.pvcAsSource.key);
  }, "claim released once ready");

  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  await until(() => gone(() => getSnapshot(f.admin, "snap")), "snapshot gone", { timeoutMs: 60_000 });
  await until(() => gone(() => getContent(f.admin, `snapcontent-${created.metadata.uid!}`)), "content gone");
  const after = await csi.controller.listSnapshots({ snapshotId: handle });
  assert.equal(after.entries?.length ?? 0, 0, "the backend snapshot was deleted");
  assert.deepEqual(forbidden(f.cluster.audit), [], "no 403 for either component");
});
