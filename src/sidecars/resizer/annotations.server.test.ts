// The two annotations through which the resizer tells others about a resize, on the real API
// server: the PV's volume.alpha.kubernetes.io/pre-resize-capacity (AnnotateFsResize, beta and on
// by default in external-resizer v2.2.0, #581) — with which a claim bound anew to a volume whose
// node expansion was cut short gets the old size, so the node expansion resumes — and the
// claim's volume.kubernetes.io/node-expansion-not-required (v2.0.0, #496), set when the
// controller finished the whole resize and dropped when a new expansion starts.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type PersistentVolumeClaim } from "../../api/index.ts";
import {
  STUB,
  boundClaim,
  claimStatus,
  getClaim,
  getVolume,
  runResizer,
  setRequest,
  startCluster,
  startResizeStub,
} from "../../../test/harness/resizer.ts";
import { runLoops } from "../../../test/harness/controllers.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { until } from "../../../test/harness/until.ts";

const PRE_RESIZE = "volume.alpha.kubernetes.io/pre-resize-capacity";
const NOT_REQUIRED = "volume.kubernetes.io/node-expansion-not-required";

test("AnnotateFsResize (default on): the old size on the PV; a claim bound anew resumes the node expansion; removed once done", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  await boundClaim(cluster, { name: "fs", driver: STUB, handle: "vol-fs" });
  await cluster.client.patch(GVR.persistentVolumes, "pv-fs", {
    spec: { persistentVolumeReclaimPolicy: "Retain" },
  });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "fs", "2Mi");
  const grown = await until(async () => {
    const pv = await getVolume(cluster, "pv-fs");
    return pv?.spec?.capacity?.storage === "2Mi" && pv.metadata?.annotations?.[PRE_RESIZE] ? pv : undefined;
  }, "PV grown and annotated");
  assert.equal(grown.metadata?.annotations?.[PRE_RESIZE], "1Mi");
  await until(
    async () => (await claimStatus(cluster, "fs")).allocatedResourceStatuses?.storage === "NodeResizePending",
    "NodeResizePending",
  );
  // The claim goes before the node expanded; the admin frees the retained volume for a new claim.
  await cluster.client.delete(GVR.persistentVolumeClaims, "fs", { namespace: "default" });
  await cluster.client.patch(GVR.persistentVolumes, "pv-fs", { spec: { claimRef: null } });
  await cluster.client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "fs-again", namespace: "default" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "sc",
      volumeName: "pv-fs",
    },
  });
  const loops = runLoops(cluster.client, { controllers: ["persistentvolume-binder-controller"] });
  defer(t, () => loops.stop());
  // The PV controller binds it with the size from before the resize: the kubelet sees the PV
  // larger than the claim and expands the filesystem.
  const rebound = await until(async () => {
    const s = await claimStatus(cluster, "fs-again");
    return s.phase === "Bound" ? s : undefined;
  }, "bound anew");
  assert.equal(rebound.capacity?.storage, "1Mi");
  assert.equal((await getVolume(cluster, "pv-fs"))?.metadata?.annotations?.[PRE_RESIZE], "1Mi");
  // The node finishes (as the kubelet's MarkFSResizeFinished): the resizer drops the annotation.
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    "fs-again",
    { status: { capacity: { storage: "2Mi" } } },
    { namespace: "default", subresource: "status" },
  );
  await until(
    async () => (await getVolume(cluster, "pv-fs"))?.metadata?.annotations?.[PRE_RESIZE] === undefined,
    "annotation removed",
  );
  assert.equal(stub.expands.length, 1, "the resume needed no second controller expansion");
});

test("node-expansion-not-required: set when the controller finished the resize, dropped when a node step is needed again", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  await boundClaim(cluster, { name: "nr", driver: STUB, handle: "vol-nr" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "nr", "2Mi");
  await until(
    async () => (await getClaim(cluster, "nr"))?.metadata.annotations?.[NOT_REQUIRED] === "true",
    "annotated",
  );
  assert.equal((await claimStatus(cluster, "nr")).capacity?.storage, "2Mi");
  // No pre-resize-capacity: nothing is left for the node.
  assert.equal((await getVolume(cluster, "pv-nr"))?.metadata?.annotations?.[PRE_RESIZE], undefined);
  stub.nodeExpansionRequired = true;
  await setRequest(cluster, "nr", "3Mi");
  const claim = await until(async () => {
    const c = await getClaim(cluster, "nr");
    return c?.status?.allocatedResourceStatuses?.storage === "NodeResizePending" ? c : undefined;
  }, "NodeResizePending");
  assert.equal(claim.metadata.annotations?.[NOT_REQUIRED], undefined);
  assert.equal((await getVolume(cluster, "pv-nr"))?.metadata?.annotations?.[PRE_RESIZE], "2Mi");
});
