// Per-kind write strategy against a real server over HTTPS (raw requests and kubectl): which
// metadata a /status write may change, unconditional updates, create on PUT, GC finalizers on
// delete (both settings), no new finalizers while deleting, and the body's apiVersion. Each
// expectation is kube-apiserver 1.32's behaviour for the same request.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { raw, startTestServer, type RawResponse, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";

let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(async () => {
  await server.dispose();
});

function send(method: string, path: string, body?: unknown, contentType?: string): Promise<RawResponse> {
  return raw(server.handle, {
    method,
    path,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    ...(contentType !== undefined ? { headers: { "Content-Type": contentType } } : {}),
  });
}

async function ok(response: Promise<RawResponse>, code = 200): Promise<Record<string, unknown>> {
  const result = await response;
  assert.equal(result.status, code, result.text);
  return result.json();
}

function metadataOf(object: Record<string, unknown>): Record<string, unknown> {
  return object.metadata as Record<string, unknown>;
}

/** Writes `change` into the object's metadata and `status`, PUT to /status; answers the stored object. */
async function statusWrite(
  path: string,
  status: Record<string, unknown>,
  change: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const current = await ok(send("GET", path));
  const updated = { ...current, metadata: { ...metadataOf(current), ...change }, status };
  await ok(send("PUT", `${path}/status`, updated));
  return ok(send("GET", path));
}

const METADATA_CHANGE = {
  labels: { changed: "yes" },
  annotations: { changed: "yes" },
  finalizers: ["example.com/added"],
  ownerReferences: [
    { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "0b6c1f2e-0000-4000-8000-000000000001" },
  ],
};

const VA = {
  apiVersion: "storage.k8s.io/v1",
  kind: "VolumeAttachment",
  metadata: { name: "va-status", labels: { original: "yes" } },
  spec: { attacher: "hostpath.csi.k8s.io", nodeName: "node-1", source: { persistentVolumeName: "pv-1" } },
};

const GIZMO_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "gizmos.strategy.example.com" },
  spec: {
    group: "strategy.example.com",
    scope: "Namespaced",
    names: { plural: "gizmos", singular: "gizmo", kind: "Gizmo" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: { type: "object", properties: { ready: { type: "boolean" } } },
            },
          },
        },
      },
    ],
  },
};
const GIZMOS = "/apis/strategy.example.com/v1/namespaces/default/gizmos";

describe("status writes change only the metadata the kind's status strategy allows", () => {
  before(async () => {
    await ok(send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GIZMO_CRD), 201);
  });

  test("VolumeAttachment /status keeps all metadata (ResetObjectMetaForStatus)", async () => {
    await ok(send("POST", "/apis/storage.k8s.io/v1/volumeattachments", VA), 201);
    const stored = await statusWrite(
      "/apis/storage.k8s.io/v1/volumeattachments/va-status",
      { attached: true },
      METADATA_CHANGE,
    );
    assert.deepEqual(stored.status, { attached: true });
    const meta = metadataOf(stored);
    assert.deepEqual(meta.labels, { original: "yes" });
    assert.equal(meta.annotations, undefined);
    assert.equal(meta.finalizers, undefined);
    assert.equal(meta.ownerReferences, undefined);
  });

  test("a custom resource's /status keeps the old object except status", async () => {
    const gizmo = {
      apiVersion: "strategy.example.com/v1",
      kind: "Gizmo",
      metadata: { name: "g-status", labels: { original: "yes" } },
      spec: { size: 1 },
    };
    await ok(send("POST", GIZMOS, gizmo), 201);
    const stored = await statusWrite(`${GIZMOS}/g-status`, { ready: true }, METADATA_CHANGE);
    assert.deepEqual(stored.status, { ready: true });
    const meta = metadataOf(stored);
    assert.deepEqual(meta.labels, { original: "yes" });
    assert.equal(meta.annotations, undefined);
    assert.equal(meta.finalizers, undefined);
    assert.equal(meta.ownerReferences, undefined);
  });

  test("pods/status may change labels, annotations and finalizers but not ownerReferences", async () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p-status" },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    };
    await ok(send("POST", "/api/v1/namespaces/default/pods", pod), 201);
    const path = "/api/v1/namespaces/default/pods/p-status";
    const stored = await statusWrite(path, { phase: "Running" }, METADATA_CHANGE);
    const meta = metadataOf(stored);
    assert.deepEqual(meta.labels, { changed: "yes" });
    assert.deepEqual(meta.annotations, { changed: "yes" });
    assert.deepEqual(meta.finalizers, ["example.com/added"]);
    assert.equal(meta.ownerReferences, undefined);
    // Release the finalizer so the namespace stays clean.
    await ok(send("PATCH", path, { metadata: { finalizers: null } }, "application/merge-patch+json"));
  });

  test("a PVC's /status may change its metadata (default policy)", async () => {
    const claim = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "c-status" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    };
    await ok(send("POST", "/api/v1/namespaces/default/persistentvolumeclaims", claim), 201);
    const path = "/api/v1/namespaces/default/persistentvolumeclaims/c-status";
    const stored = await statusWrite(path, { phase: "Bound" }, { labels: { changed: "yes" } });
    assert.deepEqual(metadataOf(stored).labels, { changed: "yes" });
  });
});

describe("update preconditions and create on update", () => {
  test("an unconditional update of a VolumeAttachment or a custom resource is 422", async () => {
    const va = { ...VA, metadata: { name: "va-uncond" } };
    await ok(send("POST", "/apis/storage.k8s.io/v1/volumeattachments", va), 201);
    const response = await send("PUT", "/apis/storage.k8s.io/v1/volumeattachments/va-uncond", {
      ...va,
      metadata: { name: "va-uncond", labels: { a: "b" } },
    });
    assert.equal(response.status, 422, response.text);
    assert.equal(
      response.json().message,
      'volumeattachments.storage.k8s.io "va-uncond" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
    const gizmo = { apiVersion: "strategy.example.com/v1", kind: "Gizmo", metadata: { name: "g-uncond" } };
    await ok(send("POST", GIZMOS, gizmo), 201);
    const custom = await send("PUT", `${GIZMOS}/g-uncond`, { ...gizmo, spec: { size: 2 } });
    assert.equal(custom.status, 422, custom.text);
    assert.match(String(custom.json().message), /^gizmos\.strategy\.example\.com "g-uncond" is invalid: /);
  });

  test("an unconditional update of a ConfigMap is accepted", async () => {
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm-uncond" }, data: { a: "1" } };
    await ok(send("POST", "/api/v1/namespaces/default/configmaps", cm), 201);
    const updated = await ok(
      send("PUT", "/api/v1/namespaces/default/configmaps/cm-uncond", { ...cm, data: { a: "2" } }),
    );
    assert.deepEqual(updated.data, { a: "2" });
  });

  test("PUT creates a Lease (AllowCreateOnUpdate) but not a ConfigMap", async () => {
    const lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "put-created" },
      spec: { holderIdentity: "me" },
    };
    const created = await ok(
      send("PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/put-created", lease),
      201,
    );
    assert.equal((created.spec as Record<string, unknown>).holderIdentity, "me");
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "put-absent" } };
    const response = await send("PUT", "/api/v1/namespaces/default/configmaps/put-absent", cm);
    assert.equal(response.status, 404, response.text);
  });
});

describe("finalizers while deleting", () => {
  test("adding a finalizer to an object being deleted is 422; removing one is fine", async () => {
    const cm = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cm-deleting", finalizers: ["example.com/keep"] },
    };
    const path = "/api/v1/namespaces/default/configmaps/cm-deleting";
    await ok(send("POST", "/api/v1/namespaces/default/configmaps", cm), 201);
    await ok(send("DELETE", path));
    const patch = { metadata: { finalizers: ["example.com/keep", "example.com/new"] } };
    const response = await send("PATCH", path, patch, "application/merge-patch+json");
    assert.equal(response.status, 422, response.text);
    assert.equal(
      response.json().message,
      'ConfigMap "cm-deleting" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/new"}',
    );
    await ok(send("PATCH", path, { metadata: { finalizers: null } }, "application/merge-patch+json"));
    assert.equal((await send("GET", path)).status, 404);
  });
});

describe("the body's apiVersion", () => {
  test("a version the kind is not served in is 400 on create, update and patch", async () => {
    const response = await send("POST", "/api/v1/namespaces/default/configmaps", {
      apiVersion: "v2",
      kind: "ConfigMap",
      metadata: { name: "cm-v2" },
    });
    assert.equal(response.status, 400, response.text);
    assert.equal(
      response.json().message,
      'ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30"',
    );
    const other = await send("POST", "/api/v1/namespaces/default/configmaps", {
      apiVersion: "storage.k8s.io/v1",
      kind: "ConfigMap",
      metadata: { name: "cm-other-group" },
    });
    assert.equal(other.status, 400, other.text);
    const event = await send("POST", "/api/v1/namespaces/default/events", {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: "ev-other-group" },
    });
    assert.equal(event.status, 400, event.text);
    assert.equal(
      event.json().message,
      "the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)",
    );
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm-version" } };
    const path = "/api/v1/namespaces/default/configmaps/cm-version";
    await ok(send("POST", "/api/v1/namespaces/default/configmaps", cm), 201);
    const put = await send("PUT", path, { ...cm, apiVersion: "v2" });
    assert.equal(put.status, 400, put.text);
    const patch = await send(
      "PATCH",
      path,
      [{ op: "replace", path: "/apiVersion", value: "v2" }],
      "application/json-patch+json",
    );
    assert.equal(patch.status, 400, patch.text);
    const custom = await send("POST", GIZMOS, {
      apiVersion: "strategy.example.com/v9",
      kind: "Gizmo",
      metadata: { name: "g-v9" },
    });
    assert.equal(custom.status, 400, custom.text);
    assert.equal(
      custom.json().message,
      "the API version in the data (strategy.example.com/v9) does not match the expected API version (strategy.example.com/v1)",
    );
  });
});

describe("propagationPolicy finalizers", () => {
  test("Foreground and Orphan deletes keep the object with the GC's finalizer (default)", async () => {
    for (const [policy, finalizer] of [
      ["Foreground", "foregroundDeletion"],
      ["Orphan", "orphan"],
    ] as const) {
      const name = `cm-${policy.toLowerCase()}`;
      const path = `/api/v1/namespaces/default/configmaps/${name}`;
      await ok(send("POST", "/api/v1/namespaces/default/configmaps", { metadata: { name } }), 201);
      const deleted = await ok(send("DELETE", `${path}?propagationPolicy=${policy}`));
      assert.deepEqual(metadataOf(deleted).finalizers, [finalizer]);
      const stored = await ok(send("GET", path));
      assert.ok(metadataOf(stored).deletionTimestamp, `${policy} delete sets deletionTimestamp`);
      await ok(send("PATCH", path, { metadata: { finalizers: null } }, "application/merge-patch+json"));
      assert.equal((await send("GET", path)).status, 404);
    }
    // A Background delete (here: orphanDependents=false) of an object held by orphan drops that finalizer.
    const held = "/api/v1/namespaces/default/configmaps/cm-held";
    await ok(
      send("POST", "/api/v1/namespaces/default/configmaps", {
        metadata: { name: "cm-held", finalizers: ["example.com/keep"] },
      }),
      201,
    );
    const orphaned = await ok(send("DELETE", `${held}?propagationPolicy=Orphan`));
    assert.deepEqual(metadataOf(orphaned).finalizers, ["example.com/keep", "orphan"]);
    const background2 = await ok(send("DELETE", held, { kind: "DeleteOptions", orphanDependents: false }));
    assert.deepEqual(metadataOf(background2).finalizers, ["example.com/keep"]);
    await ok(send("PATCH", held, { metadata: { finalizers: null } }, "application/merge-patch+json"));
    const background = "/api/v1/namespaces/default/configmaps/cm-background";
    await ok(
      send("POST", "/api/v1/namespaces/default/configmaps", { metadata: { name: "cm-background" } }),
      201,
    );
    await ok(send("DELETE", `${background}?propagationPolicy=Background`));
    assert.equal((await send("GET", background)).status, 404);
  });

  test(
    "kubectl delete --cascade=foreground leaves deletionTimestamp and foregroundDeletion",
    { skip: kubectlMissing() },
    async () => {
      await ok(
        send("POST", "/api/v1/namespaces/default/configmaps", { metadata: { name: "cm-kubectl" } }),
        201,
      );
      const result = await kubectl(
        ["delete", "configmap", "cm-kubectl", "--cascade=foreground", "--wait=false"],
        { kubeconfig: server.handle.kubeconfigPath },
      );
      assert.equal(result.code, 0, result.stderr);
      const stored = await ok(send("GET", "/api/v1/namespaces/default/configmaps/cm-kubectl"));
      assert.ok(metadataOf(stored).deletionTimestamp);
      assert.deepEqual(metadataOf(stored).finalizers, ["foregroundDeletion"]);
      await ok(
        send(
          "PATCH",
          "/api/v1/namespaces/default/configmaps/cm-kubectl",
          { metadata: { finalizers: null } },
          "application/merge-patch+json",
        ),
      );
    },
  );

  test("with gcFinalizers: false a Foreground delete removes the object at once", async (t) => {
    const plain = await startTestServer({ gcFinalizers: false });
    t.after(() => plain.dispose());
    const path = "/api/v1/namespaces/default/configmaps/cm-nogc";
    const created = await raw(plain.handle, {
      method: "POST",
      path: "/api/v1/namespaces/default/configmaps",
      body: JSON.stringify({ metadata: { name: "cm-nogc" } }),
    });
    assert.equal(created.status, 201, created.text);
    const deleted = await raw(plain.handle, {
      method: "DELETE",
      path: `${path}?propagationPolicy=Foreground`,
    });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await raw(plain.handle, { path })).status, 404);
  });
});
