// Reserved-parameter stripping and every secret template token and error (FACTS.md "Secret
// templates"), plus access modes, error classification and names.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { PersistentVolumeClaim } from "../../api/index.ts";
import { GrpcStatus } from "../../csi/index.ts";
import { csiAccessMode } from "../../kube/index.ts";
import { formatCsiError, provisioningStateFromError } from "./errors.ts";
import { provisionerIdentity, volumeName } from "./names.ts";
import { classFsType, driverParameters, secretReference } from "./parameters.ts";

const CLAIM: PersistentVolumeClaim = {
  metadata: { name: "data", namespace: "team-a", annotations: { "example.com/secret": "custom" } },
};
const P = "csi.storage.k8s.io/";

test("driver parameters: reserved and legacy keys stripped; unknown reserved key is an error", () => {
  assert.deepEqual(
    driverParameters({
      [`${P}fstype`]: "xfs",
      [`${P}provisioner-secret-name`]: "s",
      [`${P}provisioner-secret-namespace`]: "n",
      [`${P}secret-name`]: "s",
      [`${P}secret-namespace`]: "n",
      csiNodeStageSecretName: "x",
      csiNodeStageSecretNamespace: "y",
      pool: "fast",
    }),
    { pool: "fast" },
  );
  assert.throws(
    () => driverParameters({ [`${P}bogus`]: "1" }),
    /found unknown parameter key "csi.storage.k8s.io\/bogus"/,
  );
  assert.equal(classFsType({ [`${P}fstype`]: "xfs" }, "ext4"), "xfs");
  assert.equal(classFsType({}, "ext4"), "ext4");
  assert.throws(() => classFsType({ [`${P}fstype`]: "xfs", fstype: "ext4" }), /both/);
});

test("name templates: ${pv.name}, ${pvc.name}, ${pvc.namespace}, ${pvc.annotations['key']}", () => {
  const params = (name: string, namespace = "secrets") => ({
    [`${P}provisioner-secret-name`]: name,
    [`${P}provisioner-secret-namespace`]: namespace,
  });
  assert.deepEqual(secretReference("provisioner", params("${pv.name}"), "pvc-1", CLAIM), {
    name: "pvc-1",
    namespace: "secrets",
  });
  assert.deepEqual(secretReference("provisioner", params("${pvc.name}-s"), "pvc-1", CLAIM), {
    name: "data-s",
    namespace: "secrets",
  });
  assert.deepEqual(secretReference("provisioner", params("${pvc.namespace}"), "pvc-1", CLAIM), {
    name: "team-a",
    namespace: "secrets",
  });
  assert.deepEqual(
    secretReference("provisioner", params("${pvc.annotations['example.com/secret']}"), "pvc-1", CLAIM),
    { name: "custom", namespace: "secrets" },
  );
  assert.deepEqual(
    secretReference(
      "nodeStage",
      { [`${P}node-stage-secret-name`]: "plain", [`${P}node-stage-secret-namespace`]: "ns" },
      "pv",
      CLAIM,
    ),
    {
      name: "plain",
      namespace: "ns",
    },
  );
});

test("namespace templates: only ${pv.name} and ${pvc.namespace}", () => {
  const params = (namespace: string) => ({
    [`${P}provisioner-secret-name`]: "s",
    [`${P}provisioner-secret-namespace`]: namespace,
  });
  assert.equal(secretReference("provisioner", params("${pvc.namespace}"), "pv", CLAIM)?.namespace, "team-a");
  assert.equal(secretReference("provisioner", params("${pv.name}"), "pvc-1", CLAIM)?.namespace, "pvc-1");
  assert.throws(
    () => secretReference("provisioner", params("${pvc.name}"), "pv", CLAIM),
    /invalid tokens: \["pvc.name"\]/,
  );
  assert.throws(
    () => secretReference("provisioner", params("${pvc.annotations['example.com/secret']}"), "pv", CLAIM),
    /invalid tokens/,
  );
});

test("template errors: unknown token, half a pair, legacy + prefixed, invalid names", () => {
  const both = (name: string, namespace: string) => ({
    [`${P}provisioner-secret-name`]: name,
    [`${P}provisioner-secret-namespace`]: namespace,
  });
  assert.throws(
    () => secretReference("provisioner", both("${bogus}", "ns"), "pv", CLAIM),
    /invalid tokens: \["bogus"\]/,
  );
  assert.throws(
    () => secretReference("provisioner", { [`${P}provisioner-secret-name`]: "s" }, "pv", CLAIM),
    /Both must be specified/,
  );
  assert.throws(
    () => secretReference("provisioner", { [`${P}provisioner-secret-namespace`]: "s" }, "pv", CLAIM),
    /Both must be specified/,
  );
  assert.throws(
    () =>
      secretReference(
        "provisioner",
        { ...both("s", "n"), csiProvisionerSecretName: "s", csiProvisionerSecretNamespace: "n" },
        "pv",
        CLAIM,
      ),
    /cannot be specified together/,
  );
  assert.throws(
    () => secretReference("provisioner", both("s", "Not_A_Label"), "pv", CLAIM),
    /is not a valid namespace name/,
  );
  assert.throws(
    () => secretReference("provisioner", both("${pvc.name}_x", "ns"), "pv", CLAIM),
    /resolved to "data_x" which is not a valid secret name/,
  );
  // For deletion (no claim) only ${pv.name} exists.
  assert.throws(() => secretReference("provisioner", both("${pvc.name}", "ns"), "pv"), /invalid tokens/);
});

test("legacy keys and the default secret pair", () => {
  assert.deepEqual(
    secretReference(
      "controllerPublish",
      { csiControllerPublishSecretName: "a", csiControllerPublishSecretNamespace: "b" },
      "pv",
      CLAIM,
    ),
    { name: "a", namespace: "b" },
  );
  const defaults = { [`${P}secret-name`]: "d", [`${P}secret-namespace`]: "dn" };
  assert.deepEqual(secretReference("nodePublish", defaults, "pv", CLAIM), { name: "d", namespace: "dn" });
  assert.equal(secretReference("nodeExpand", {}, "pv", CLAIM), undefined);
});

test("access modes (FACTS.md mapping)", () => {
  assert.equal(csiAccessMode(["ReadWriteOncePod"], true), "SINGLE_NODE_SINGLE_WRITER");
  assert.equal(csiAccessMode(["ReadWriteOncePod"], false), "SINGLE_NODE_WRITER");
  assert.equal(csiAccessMode(["ReadWriteMany", "ReadOnlyMany"], false), "MULTI_NODE_MULTI_WRITER");
  assert.equal(csiAccessMode(["ReadOnlyMany"], true), "MULTI_NODE_READER_ONLY");
  assert.equal(csiAccessMode(["ReadWriteOnce"], true), "SINGLE_NODE_MULTI_WRITER");
  assert.equal(csiAccessMode(["ReadWriteOnce"], false), "SINGLE_NODE_WRITER");
  assert.throws(
    () => csiAccessMode(["ReadOnlyMany", "ReadWriteOnce"], false),
    /ReadOnlyMany and ReadWriteOnce/,
  );
  assert.throws(() => csiAccessMode(["ReadWriteOncePod", "ReadWriteOnce"], true), /ReadWriteOncePod/);
});

test("error classification (checkError)", () => {
  const err = (code: number) => Object.assign(new Error("x"), { code, details: "why" });
  const ctx = { topology: true, selectedNode: true };
  assert.equal(provisioningStateFromError(err(GrpcStatus.RESOURCE_EXHAUSTED), ctx), "reschedule");
  assert.equal(
    provisioningStateFromError(err(GrpcStatus.RESOURCE_EXHAUSTED), { topology: false, selectedNode: true }),
    "finished",
  );
  assert.equal(
    provisioningStateFromError(err(GrpcStatus.RESOURCE_EXHAUSTED), { topology: true, selectedNode: false }),
    "finished",
  );
  for (const code of [
    GrpcStatus.CANCELLED,
    GrpcStatus.DEADLINE_EXCEEDED,
    GrpcStatus.UNAVAILABLE,
    GrpcStatus.ABORTED,
  ])
    assert.equal(provisioningStateFromError(err(code), ctx), "inBackground");
  assert.equal(provisioningStateFromError(new Error("socket hang up"), ctx), "inBackground");
  for (const code of [
    GrpcStatus.INVALID_ARGUMENT,
    GrpcStatus.INTERNAL,
    GrpcStatus.NOT_FOUND,
    GrpcStatus.ALREADY_EXISTS,
  ])
    assert.equal(provisioningStateFromError(err(code), ctx), "finished");
  assert.equal(
    formatCsiError(err(GrpcStatus.DEADLINE_EXCEEDED)),
    "rpc error: code = DeadlineExceeded desc = why",
  );
});

test("volume names and provisioner identity", () => {
  const uid = "0b6c2f1e-5d2a-4c1b-9f00-1234567890ab";
  assert.equal(volumeName("pvc", uid, -1), `pvc-${uid}`);
  assert.equal(volumeName("vol", uid, 8), "vol-0b6c2f1e");
  assert.equal(volumeName("pvc", uid, 12), "pvc-0b6c2f1e5d2a");
  assert.match(provisionerIdentity("d.io", "", 1700000000000), /^1700000000000-\d{1,4}-d\.io$/);
  assert.match(provisionerIdentity("d.io", "node-1", 1), /^1-\d{1,4}-d\.io-node-1$/);
});
