// --handle-volume-inuse-error without a cluster-wide pod cache (external-resizer#211: the pod
// informer of upstream grows with every pod of the cluster): `csikit resizer` under its own
// ServiceAccount and the Role of deploy/rbac/csi-resizer.yaml, as `csikit up` runs it, with an
// offline-only driver. After FAILED_PRECONDITION the claim waits while a pod uses it and expands
// once the pod is gone; the audit log shows the resizer never watched pods and only listed the
// pods of the claim's namespace, and only while such a claim waited.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type CoreEvent, type PersistentVolumeClaim } from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  STUB,
  boundClaim,
  podUsing,
  runResizer,
  setRequest,
  startResizeStub,
} from "../../../test/harness/resizer.ts";
import { describeEvent, forbidden, startRbacCluster, usernameOf } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";

const IDENTITY = { kind: "serviceAccount", namespace: "default", name: "csi-resizer" } as const;

test("in-use volume under the resizer's own Role: waits while a pod uses the claim, no pod watch, only namespaced lists", async (t) => {
  const cluster = await startRbacCluster(t);
  const admin = cluster.admin;
  await admin.create(GVR.storageClasses, {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: "sc" },
    provisioner: STUB,
    allowVolumeExpansion: true,
  });
  await admin.create(GVR.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } });
  const stub = await startResizeStub(t, cluster.dir, { online: false });
  stub.nodeExpansionRequired = false;
  let published = true;
  stub.onExpand = async () => {
    if (published) throw new CsiError(GrpcStatus.FAILED_PRECONDITION, "volume is published");
  };
  await boundClaim({ client: admin }, { name: "busy", driver: STUB, handle: "vol-busy" });
  await podUsing({ client: admin }, "user", "busy");
  // Pods the resizer has no business with: it must not hold them.
  for (const ns of ["default", "other"])
    await admin.create(GVR.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: `bystander-${ns}`, namespace: ns },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
  const kubeconfig = await cluster.componentKubeconfig("resizer", IDENTITY);
  runResizer(t, { kubeconfig }, stub.server.path);
  const user = usernameOf(IDENTITY);
  const podRequests = () =>
    cluster.audit.filter((e) => e.user.username === user && e.objectRef?.resource === "pods");
  // Nothing about pods until a claim fails as in use.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(podRequests().map(describeEvent), []);
  await setRequest({ client: admin }, "busy", "2Mi");
  const inUse = async () =>
    (await admin.list<CoreEvent>(GVR.events, { namespace: "default" })).items.filter(
      (e) =>
        e.reason === "VolumeResizeFailed" &&
        /only supports offline expansion and volume is currently in-use/.test(e.message ?? ""),
    );
  await until(async () => (await inUse()).length > 0, "in-use event");
  assert.equal(stub.expands.length, 1, "no second ControllerExpandVolume while the pod runs");
  published = false;
  await admin.delete(GVR.pods, "user", { namespace: "default" });
  await until(
    async () =>
      (await admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "busy", { namespace: "default" }))
        .status?.capacity?.storage === "2Mi",
    "capacity 2Mi",
  );
  assert.equal(stub.expands.length, 2);
  const pods = podRequests();
  assert.ok(pods.length > 0, "the pods of the claim's namespace were looked up");
  for (const event of pods) {
    assert.equal(event.verb, "list", describeEvent(event));
    assert.equal(event.objectRef?.namespace, "default", describeEvent(event));
  }
  assert.deepEqual(forbidden(cluster.audit, user).map(describeEvent), []);
});
