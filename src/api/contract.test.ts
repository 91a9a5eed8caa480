import { test } from "node:test";
import assert from "node:assert/strict";
import { ANNOTATIONS, EVENT_REASONS, FINALIZERS, LABELS, attacherFinalizer } from "./contract.ts";
import { GVR, apiVersionOf, collectionPath, parseAPIVersion } from "./gvr.ts";
import { isQualifiedName } from "./validation.ts";

test("contract keys are unique, valid qualified names, and say who sets them", () => {
  for (const table of [ANNOTATIONS, FINALIZERS, LABELS]) {
    const keys = Object.values(table).map((entry) => entry.key);
    assert.equal(new Set(keys).size, keys.length);
    for (const entry of Object.values(table)) {
      assert.deepEqual(isQualifiedName(entry.key), [], entry.key);
      assert.ok(entry.setBy.length > 0 && entry.on.length > 0, entry.key);
    }
  }
  const reasons = Object.values(EVENT_REASONS).map((entry) => entry.key);
  assert.equal(new Set(reasons).size, reasons.length);
  for (const reason of reasons) assert.match(reason, /^[A-Z][A-Za-z]+$/);
  assert.equal(ANNOTATIONS.selectedNode.key, "volume.kubernetes.io/selected-node");
  assert.equal(FINALIZERS.pvcProtection.key, "kubernetes.io/pvc-protection");
});

test("attacher finalizer sanitizes the driver name", () => {
  assert.equal(attacherFinalizer("hostpath.csi.k8s.io"), "external-attacher/hostpath-csi-k8s-io");
  assert.equal(attacherFinalizer("a_b/c-d"), "external-attacher/a-b-c-d");
  // As SanitizeDriverName: a name must not end in "-".
  assert.equal(attacherFinalizer("driver."), "external-attacher/driver-X");
});

test("GVR helpers", () => {
  assert.equal(apiVersionOf("", "v1"), "v1");
  assert.equal(apiVersionOf(GVR.storageClasses.group, GVR.storageClasses.version), "storage.k8s.io/v1");
  assert.deepEqual(parseAPIVersion("snapshot.storage.k8s.io/v1"), {
    group: "snapshot.storage.k8s.io",
    version: "v1",
  });
  assert.deepEqual(parseAPIVersion("v1"), { group: "", version: "v1" });
  assert.equal(
    collectionPath(GVR.persistentVolumeClaims, "ns"),
    "/api/v1/namespaces/ns/persistentvolumeclaims",
  );
  assert.equal(collectionPath(GVR.volumeAttachments), "/apis/storage.k8s.io/v1/volumeattachments");
});
