// Secrets end to end with a recording driver: the provisioner secret resolved from templates
// (a PVC annotation in the name, the claim namespace as namespace) is read and passed whole to
// CreateVolume and, from the PV's deletion annotations, to DeleteVolume; the other secret refs
// land on the PV (the controller-modify one as annotations, v6.2); --extra-create-metadata adds the claim/PV keys. The secret's value appears in
// no log line (at -v 5, where every CSI request is traced) and in no Event.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR } from "../../api/index.ts";
import {
  STUB,
  bind,
  createClaim,
  createClass,
  events,
  getVolume,
  release,
  runProvisioner,
  startCluster,
  startStub,
  waitForVolume,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";

const SECRET_VALUE = "hunter2-do-not-log";
const P = "csi.storage.k8s.io/";

test("provisioner secret from templates reaches CreateVolume and DeleteVolume; never logs or events", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await cluster.client.create(GVR.namespaces, { metadata: { name: "secrets" } });
  await cluster.client.create(GVR.secrets, {
    metadata: { name: "team-a-creds", namespace: "default" },
    data: {
      password: Buffer.from(SECRET_VALUE).toString("base64"),
      user: Buffer.from("admin").toString("base64"),
    },
  });
  await createClass(cluster, "sc", STUB, {
    reclaimPolicy: "Delete",
    parameters: {
      pool: "gold",
      [`${P}provisioner-secret-name`]: "${pvc.annotations['example.com/creds']}",
      [`${P}provisioner-secret-namespace`]: "${pvc.namespace}",
      [`${P}node-stage-secret-name`]: "${pv.name}-stage",
      [`${P}node-stage-secret-namespace`]: "secrets",
      [`${P}controller-publish-secret-name`]: "${pvc.name}-publish",
      [`${P}controller-publish-secret-namespace`]: "${pvc.namespace}",
      [`${P}node-publish-secret-name`]: "np",
      [`${P}node-publish-secret-namespace`]: "secrets",
      [`${P}controller-expand-secret-name`]: "ce",
      [`${P}controller-expand-secret-namespace`]: "secrets",
      [`${P}node-expand-secret-name`]: "ne",
      [`${P}node-expand-secret-namespace`]: "secrets",
      // v6.2 (external-provisioner#1440): for the resizer's ControllerModifyVolume.
      [`${P}controller-modify-secret-name`]: "${pvc.name}-modify",
      [`${P}controller-modify-secret-namespace`]: "secrets",
    },
  });
  const provisioner = runProvisioner(t, cluster, stub.server.path, ["--extra-create-metadata", "-v=5"]);
  const claim = await createClaim(cluster, "db", STUB, {}, { "example.com/creds": "team-a-creds" });
  const pv = await waitForVolume(cluster, claim);
  const pvName = pv.metadata.name!;
  const request = stub.creates[0]!;
  assert.deepEqual(request.secrets, { password: SECRET_VALUE, user: "admin" });
  assert.deepEqual(request.parameters, {
    pool: "gold",
    [`${P}pvc/name`]: "db",
    [`${P}pvc/namespace`]: "default",
    [`${P}pv/name`]: pvName,
  });
  assert.equal(
    pv.metadata?.annotations?.["volume.kubernetes.io/provisioner-deletion-secret-name"],
    "team-a-creds",
  );
  assert.equal(
    pv.metadata?.annotations?.["volume.kubernetes.io/provisioner-deletion-secret-namespace"],
    "default",
  );
  assert.deepEqual(pv.spec?.csi?.nodeStageSecretRef, { name: `${pvName}-stage`, namespace: "secrets" });
  assert.deepEqual(pv.spec?.csi?.controllerPublishSecretRef, { name: "db-publish", namespace: "default" });
  assert.deepEqual(pv.spec?.csi?.nodePublishSecretRef, { name: "np", namespace: "secrets" });
  assert.deepEqual(pv.spec?.csi?.controllerExpandSecretRef, { name: "ce", namespace: "secrets" });
  assert.deepEqual(pv.spec?.csi?.nodeExpandSecretRef, { name: "ne", namespace: "secrets" });
  // The modify secret has no PV field: it rides in annotations, as upstream v6.2 writes them.
  assert.equal(pv.metadata?.annotations?.["volume.kubernetes.io/controller-modify-secret-name"], "db-modify");
  assert.equal(
    pv.metadata?.annotations?.["volume.kubernetes.io/controller-modify-secret-namespace"],
    "secrets",
  );
  await bind(cluster, claim, pv);
  await release(cluster, claim, pvName);
  await until(async () => (await getVolume(cluster, pvName)) === undefined, "PV deleted");
  assert.deepEqual(stub.deleteSecrets, [{ password: SECRET_VALUE, user: "admin" }]);
  const logs = provisioner.logs.join("\n");
  assert.ok(logs.includes("CreateVolume"), "CSI calls are traced at -v 5");
  assert.ok(!logs.includes(SECRET_VALUE), "the secret value is in no log line");
  const all = JSON.stringify(await events(cluster));
  assert.ok(!all.includes(SECRET_VALUE), "the secret value is in no Event");
});

test("a bad template or a missing secret is a ProvisioningFailed event naming the problem, not the data", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "bad", STUB, {
    parameters: {
      [`${P}provisioner-secret-name`]: "${pvc.nope}",
      [`${P}provisioner-secret-namespace`]: "default",
    },
  });
  await createClass(cluster, "missing", STUB, {
    parameters: {
      [`${P}provisioner-secret-name`]: "absent",
      [`${P}provisioner-secret-namespace`]: "default",
    },
  });
  runProvisioner(t, cluster, stub.server.path);
  await createClaim(cluster, "a", STUB, { storageClassName: "bad" });
  await createClaim(cluster, "b", STUB, { storageClassName: "missing" });
  const failures = await until(async () => {
    const list = (await events(cluster)).filter((e) => e.reason === "ProvisioningFailed");
    const a = list.find((e) => e.involvedObject.name === "a");
    const b = list.find((e) => e.involvedObject.name === "b");
    return a && b ? { a: a.message ?? "", b: b.message ?? "" } : undefined;
  }, "two ProvisioningFailed events");
  assert.match(failures.a, /invalid tokens: \["pvc.nope"\]/);
  assert.match(failures.b, /failed to get secret default\/absent: not found/);
  assert.equal(stub.creates.length, 0, "no CreateVolume without its secret");
});
