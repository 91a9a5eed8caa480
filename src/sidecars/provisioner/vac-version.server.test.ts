// Which VolumeAttributesClass API the provisioner reads, against the API server acting as each
// release, the provisioner under its own ServiceAccount and deploy/rbac/ as `csikit up` runs it:
// at 1.37 storage.k8s.io/v1 (v1beta1 is served too, and never read); at 1.33 with the beta gate
// on only v1beta1 is served and the provisioner falls back to it, so the class still reaches
// CreateVolume; at 1.33 with the gate off neither is served and the feature is off (as upstream
// v6 turns its gate off when the API is absent, external-provisioner#1423), claims still provision.

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { GVR, kubeRelease, type KubeRelease, type PersistentVolume } from "../../api/index.ts";
import {
  STUB,
  createClaim,
  createClass,
  runProvisioner,
  startStub,
  waitForVolume,
  type Cluster,
} from "../../../test/harness/provisioner.ts";
import { describeEvent, forbidden, startRbacCluster } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";

const PROVISIONER_USER = "system:serviceaccount:default:csi-provisioner";

async function provisionWithClass(t: TestContext, release: KubeRelease, classVersion: string | undefined) {
  const rbac = await startRbacCluster(t, { admission: [], release });
  const cluster: Cluster = {
    server: rbac.server,
    faults: rbac.faults,
    kubeconfig: await rbac.serviceAccountKubeconfig("default", "csi-provisioner"),
    client: rbac.admin,
    dir: rbac.dir,
  };
  const stub = await startStub(t, rbac.dir);
  await createClass(cluster, "sc", STUB);
  if (classVersion !== undefined)
    await rbac.admin.create(
      { ...GVR.volumeAttributesClasses, version: classVersion },
      {
        apiVersion: `storage.k8s.io/${classVersion}`,
        kind: "VolumeAttributesClass",
        metadata: { name: "gold" },
        driverName: STUB,
        parameters: { iops: "3000" },
      },
    );
  const provisioner = runProvisioner(t, cluster, stub.server.path, ["--feature-gates=Topology=false"]);
  const claim = await createClaim(cluster, "vac", STUB, { volumeAttributesClassName: "gold" });
  const pv: PersistentVolume = await waitForVolume(cluster, claim);
  assert.deepEqual(forbidden(rbac.audit, PROVISIONER_USER).map(describeEvent), []);
  // The versions of every VolumeAttributesClass read the provisioner made.
  const versionsRead = new Set(
    rbac.audit
      .filter(
        (e) => e.user.username === PROVISIONER_USER && e.objectRef?.resource === "volumeattributesclasses",
      )
      .map((e) => /\/apis\/storage\.k8s\.io\/([^/]+)\//.exec(e.requestURI)?.[1]),
  );
  return { stub, pv, provisioner, versionsRead };
}

test("1.37: the class is read from storage.k8s.io/v1 only; CreateVolume gets its parameters", async (t) => {
  const { stub, pv, versionsRead } = await provisionWithClass(t, kubeRelease("1.37"), "v1");
  assert.deepEqual(stub.creates[0]?.mutableParameters, { iops: "3000" });
  assert.equal(pv.spec?.volumeAttributesClassName, "gold");
  assert.deepEqual([...versionsRead], ["v1"]);
});

test("1.33 with the beta on: v1 is not served, the class is read from v1beta1", async (t) => {
  const release = kubeRelease("1.33", { VolumeAttributesClass: "true" });
  const { stub, pv, versionsRead } = await provisionWithClass(t, release, "v1beta1");
  assert.deepEqual(stub.creates[0]?.mutableParameters, { iops: "3000" });
  assert.equal(pv.spec?.volumeAttributesClassName, "gold");
  assert.deepEqual([...versionsRead], ["v1beta1"]);
});

test("1.33 with the beta off: no class API, the feature is off and the claim provisions", async (t) => {
  const { stub, provisioner, versionsRead } = await provisionWithClass(t, kubeRelease("1.33"), undefined);
  assert.deepEqual(stub.creates[0]?.mutableParameters ?? {}, {});
  assert.deepEqual([...versionsRead], []);
  await until(
    () => provisioner.logs.some((line) => line.includes("VolumeAttributesClass is not served")),
    "the provisioner says the feature is off",
  );
});
