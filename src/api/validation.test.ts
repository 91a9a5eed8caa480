import { test } from "node:test";
import assert from "node:assert/strict";
import {
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  invalidStatusMessage,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  nameIsDNSSubdomain,
  validateFinalizers,
  validateLabels,
} from "./validation.ts";

const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

test("DNS-1123 labels", () => {
  for (const ok of ["a", "abc-1", "0", "a".repeat(63)]) assert.deepEqual(isDNS1123Label(ok), [], ok);
  assert.deepEqual(isDNS1123Label("Abc"), [LABEL_MSG]);
  assert.deepEqual(isDNS1123Label("a.b"), [LABEL_MSG]);
  assert.deepEqual(isDNS1123Label("-a"), [LABEL_MSG]);
  assert.deepEqual(isDNS1123Label("a".repeat(64)), ["must be no more than 63 characters"]);
});

test("DNS-1123 subdomains", () => {
  for (const ok of ["a", "a.b", "hostpath.csi.k8s.io", "pvc-1234"])
    assert.deepEqual(isDNS1123Subdomain(ok), [], ok);
  assert.deepEqual(isDNS1123Subdomain("My_Name"), [SUBDOMAIN_MSG]);
  assert.deepEqual(isDNS1123Subdomain("a..b"), [SUBDOMAIN_MSG]);
  assert.equal(isDNS1123Subdomain("a".repeat(254))[0], "must be no more than 253 characters");
  // generateName prefixes may end in "-"
  assert.deepEqual(nameIsDNSSubdomain("csisc-", true), []);
  assert.deepEqual(nameIsDNSSubdomain("csisc-", false), [SUBDOMAIN_MSG]);
});

test("qualified names and label values", () => {
  assert.deepEqual(isQualifiedName("app"), []);
  assert.deepEqual(isQualifiedName("topology.hostpath.csi/node"), []);
  assert.match(isQualifiedName("-bad")[0] ?? "", /^name part must consist of alphanumeric/);
  assert.match(isQualifiedName("Bad_Prefix/x")[0] ?? "", /^prefix part a lowercase RFC 1123 subdomain/);
  assert.match(isQualifiedName("a/b/c")[0] ?? "", /^a qualified name must consist/);
  assert.deepEqual(isValidLabelValue(""), []);
  assert.deepEqual(isValidLabelValue("my_value.1"), []);
  assert.equal(isValidLabelValue("bad value").length, 1);
  assert.deepEqual(validateLabels({ ok: "x", "bad key!": "y" }, "metadata.labels").length, 1);
});

test("finalizers must be qualified or standard", () => {
  assert.deepEqual(
    validateFinalizers(["kubernetes.io/pvc-protection", "kubernetes", "orphan"], "metadata.finalizers"),
    [],
  );
  const errors = validateFinalizers(["protect"], "metadata.finalizers");
  assert.deepEqual(errors, [
    fieldInvalid(
      "metadata.finalizers",
      "protect",
      "name is neither a standard finalizer name nor is it fully qualified",
    ),
  ]);
});

test("field errors render as upstream", () => {
  assert.equal(fieldRequired("spec.provisioner").message, "Required value");
  assert.equal(fieldInvalid("metadata.name", "X", "bad").message, 'Invalid value: "X": bad');
  assert.equal(
    fieldNotSupported("spec.volumeMode", "Raw", ["Block", "Filesystem"]).message,
    'Unsupported value: "Raw": supported values: "Block", "Filesystem"',
  );
  assert.equal(
    invalidStatusMessage("storage.k8s.io", "StorageClass", "x", [fieldRequired("provisioner")]),
    'StorageClass.storage.k8s.io "x" is invalid: provisioner: Required value',
  );
  assert.equal(
    invalidStatusMessage("", "PersistentVolumeClaim", "c", [
      fieldRequired("spec.accessModes"),
      fieldRequired("spec.resources[storage]"),
    ]),
    'PersistentVolumeClaim "c" is invalid: [spec.accessModes: Required value, spec.resources[storage]: Required value]',
  );
});
