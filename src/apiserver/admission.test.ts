// Storage admission on a real server: default StorageClass assignment and the protection
// finalizers, as kube-apiserver's default plugins do, and the plugin-list flags' semantics.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { admissionChain } from "./admission.ts";
import { raw, startTestServer, type TestServer } from "./testing/harness.ts";

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
    ["DefaultStorageClass", "StorageObjectInUseProtection"],
  );
  assert.deepEqual(
    admissionChain({ disable: ["StorageObjectInUseProtection"] }).map((p) => p.name),
    ["DefaultStorageClass"],
  );
  assert.throws(() => admissionChain({ enable: ["NamespaceLifecyle"] }), /NamespaceLifecyle/);
});
