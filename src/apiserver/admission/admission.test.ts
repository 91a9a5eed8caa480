// Storage admission on a real server: default StorageClass assignment and the protection
// finalizers, as kube-apiserver's default plugins do, and the plugin-list flags' semantics.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { admissionChain } from "./admission.ts";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.dispose());

async function post(path: string, body: object): Promise<Record<string, unknown>> {
  const response = await raw(server.handle, { method: "POST", path, body: JSON.stringify(body) });
  assert.equal(response.status, 201, response.text);
  return response.json();
}

const claim = (name: string, spec: Record<string, unknown> = {}, annotations?: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } }, ...spec },
});

const storageClass = (name: string, isDefault: boolean) => ({
  apiVersion: "storage.k8s.io/v1",
  kind: "StorageClass",
  metadata: {
    name,
    ...(isDefault ? { annotations: { "storageclass.kubernetes.io/is-default-class": "true" } } : {}),
  },
  provisioner: "hostpath.csi.k8s.io",
});

const PVCS = "/api/v1/namespaces/default/persistentvolumeclaims";
const specOf = (object: Record<string, unknown>) => object.spec as Record<string, unknown>;

test("a claim without storageClassName gets the default class; explicit and empty classes stay", async () => {
  const before = await post(PVCS, claim("before-any-default"));
  assert.equal(specOf(before).storageClassName, undefined, "no default class yet: unchanged");

  await post("/apis/storage.k8s.io/v1/storageclasses", storageClass("plain", false));
  await post("/apis/storage.k8s.io/v1/storageclasses", storageClass("gold", true));
  const defaulted = await post(PVCS, claim("defaulted"));
  assert.equal(specOf(defaulted).storageClassName, "gold");

  const explicit = await post(PVCS, claim("explicit", { storageClassName: "plain" }));
  assert.equal(specOf(explicit).storageClassName, "plain");
  const none = await post(PVCS, claim("no-class", { storageClassName: "" }));
  assert.equal(specOf(none).storageClassName, "");
  const beta = await post(PVCS, claim("beta", {}, { "volume.beta.kubernetes.io/storage-class": "plain" }));
  assert.equal(specOf(beta).storageClassName, undefined, "the beta annotation counts as a class");
});

test("claims and volumes get their protection finalizers on create", async () => {
  const pvc = await post(PVCS, claim("protected"));
  assert.deepEqual((pvc.metadata as { finalizers?: string[] }).finalizers, ["kubernetes.io/pvc-protection"]);
  const pv = await post("/api/v1/persistentvolumes", {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: "pv-protected", finalizers: ["example.com/keep"] },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      csi: { driver: "hostpath.csi.k8s.io", volumeHandle: "vol-1" },
    },
  });
  assert.deepEqual((pv.metadata as { finalizers?: string[] }).finalizers, [
    "example.com/keep",
    "kubernetes.io/pv-protection",
  ]);
});

test("plugin lists: defaults, disable, and unknown names rejected by name", () => {
  assert.deepEqual(
    admissionChain().map((p) => p.name),
    ["DefaultStorageClass", "StorageObjectInUseProtection", "PersistentVolumeClaimResize"],
  );
  assert.deepEqual(
    admissionChain({ disable: ["StorageObjectInUseProtection"] }).map((p) => p.name),
    ["DefaultStorageClass", "PersistentVolumeClaimResize"],
  );
  assert.throws(() => admissionChain({ enable: ["NamespaceLifecyle"] }), /NamespaceLifecyle/);
});

test("PersistentVolumeClaimResize: growing needs a Bound claim of a class with allowVolumeExpansion (403 otherwise)", async () => {
  await post("/apis/storage.k8s.io/v1/storageclasses", {
    ...storageClass("expandable", false),
    allowVolumeExpansion: true,
  });
  await post("/apis/storage.k8s.io/v1/storageclasses", storageClass("fixed", false));
  const grow = (name: string, storage: string) =>
    raw(server.handle, {
      method: "PATCH",
      path: `${PVCS}/${name}`,
      body: JSON.stringify({ spec: { resources: { requests: { storage } } } }),
      headers: { "Content-Type": "application/merge-patch+json" },
    });
  const bind = async (name: string) => {
    const res = await raw(server.handle, {
      method: "PATCH",
      path: `${PVCS}/${name}/status`,
      body: '{"status":{"phase":"Bound"}}',
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(res.status, 200, res.text);
  };
  await post(PVCS, claim("resize-pending", { storageClassName: "expandable" }));
  // An unbound claim's spec is immutable: validation answers before admission, as upstream.
  const pending = await grow("resize-pending", "2Mi");
  assert.equal(pending.status, 422, pending.text);

  await post(PVCS, claim("resize-fixed", { storageClassName: "fixed" }));
  await bind("resize-fixed");
  const fixed = await grow("resize-fixed", "2Mi");
  assert.equal(fixed.status, 403, fixed.text);
  assert.equal(fixed.json().reason, "Forbidden");
  assert.equal(
    fixed.json().message,
    'persistentvolumeclaims "resize-fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize',
  );
  assert.equal((await grow("resize-fixed", "1Mi")).status, 200, "an unchanged size passes");

  await post(PVCS, claim("resize-ok", { storageClassName: "expandable" }));
  await bind("resize-ok");
  const ok = await grow("resize-ok", "2Mi");
  assert.equal(ok.status, 200, ok.text);
});
