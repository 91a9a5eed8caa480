// VolumeAttachment error codes (external-attacher v4.10+, KEP-4876) with the attacher under its
// own ServiceAccount and the Roles of deploy/rbac/, as `csikit up` runs it: a driver's
// ResourceExhausted attach lands in status.attachError.errorCode as 8 — the code the kubelet
// acts on to refresh the CSINode's allocatable count — through the status patch the Role
// allows, and nothing the attacher asks is refused. The attacher's MutableCSINodeAllocatableCount
// gate (GA in v4.12, on by default) is what writes the code: turned off, the message alone is saved.

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import {
  CsiError,
  GrpcStatus,
  SCRIPTED,
  createAttachment,
  createCsiNode,
  createVolume,
  getAttachment,
  runAttacher,
  startScripted,
  type Cluster,
} from "../../../test/harness/attacher.ts";
import { describeEvent, forbidden, startRbacCluster } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";

const ATTACHER_USER = "system:serviceaccount:default:csi-attacher";

async function attacherUnderRole(t: TestContext) {
  const rbac = await startRbacCluster(t, { admission: [] });
  const cluster: Cluster = {
    server: rbac.server,
    faults: rbac.faults,
    kubeconfig: await rbac.serviceAccountKubeconfig("default", "csi-attacher"),
    client: rbac.admin,
    dir: rbac.dir,
  };
  const driver = await startScripted(t, rbac.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await createCsiNode(rbac.admin, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(rbac.admin, "pv-x", SCRIPTED, "vol-x");
  return { rbac, cluster, driver };
}

test("under deploy/rbac: a ResourceExhausted ControllerPublish is saved with errorCode 8, then cleared on success", async (t) => {
  const { rbac, cluster, driver } = await attacherUnderRole(t);
  let exhausted = true;
  driver.onPublish = async () => {
    if (exhausted) throw new CsiError(GrpcStatus.RESOURCE_EXHAUSTED, "node has no free attach slot");
  };
  runAttacher(t, cluster, driver.path);
  await createAttachment(rbac.admin, "va-x", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-x" });

  const failed = await until(
    async () => (await getAttachment(rbac.admin, "va-x"))?.status?.attachError,
    "attachError on va-x",
  );
  assert.equal(failed.errorCode, 8, "RESOURCE_EXHAUSTED is gRPC code 8");
  assert.equal(failed.message, "rpc error: code = ResourceExhausted desc = node has no free attach slot");
  exhausted = false;
  const attached = await until(async () => {
    const va = await getAttachment(rbac.admin, "va-x");
    return va?.status?.attached ? va : undefined;
  }, "va-x attached");
  assert.equal(attached.status?.attachError, undefined, "the error, code and all, is cleared");
  assert.deepEqual(forbidden(rbac.audit, ATTACHER_USER).map(describeEvent), []);
  const statusPatches = rbac.audit.filter(
    (e) =>
      e.user.username === ATTACHER_USER &&
      e.verb === "patch" &&
      e.objectRef?.resource === "volumeattachments" &&
      e.objectRef.subresource === "status",
  );
  assert.ok(statusPatches.length >= 2, "error and success written through volumeattachments/status");
});

test("--feature-gates=MutableCSINodeAllocatableCount=false: the attach error is saved without errorCode", async (t) => {
  const { rbac, cluster, driver } = await attacherUnderRole(t);
  driver.onPublish = async () => {
    throw new CsiError(GrpcStatus.RESOURCE_EXHAUSTED, "node has no free attach slot");
  };
  runAttacher(t, cluster, driver.path, ["--feature-gates=MutableCSINodeAllocatableCount=false"]);
  await createAttachment(rbac.admin, "va-x", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-x" });
  const failed = await until(
    async () => (await getAttachment(rbac.admin, "va-x"))?.status?.attachError,
    "attachError on va-x",
  );
  assert.equal(failed.message, "rpc error: code = ResourceExhausted desc = node has no free attach slot");
  assert.equal(failed.errorCode, undefined);
  assert.deepEqual(forbidden(rbac.audit, ATTACHER_USER).map(describeEvent), []);
});
