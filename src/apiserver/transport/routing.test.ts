import { test } from "node:test";
import assert from "node:assert/strict";
import { resolveRoute } from "./routing.ts";

test("routing resolves paths like kube-apiserver's RequestInfoResolver", () => {
  const r = (method: string, path: string, watch = false) => resolveRoute(method, path, watch);
  assert.deepEqual(r("GET", "/api/v1/namespaces/ns1/pods/p1/status"), {
    kind: "resource",
    request: {
      verb: "get",
      group: "",
      version: "v1",
      resource: "pods",
      namespace: "ns1",
      namespaceInPath: true,
      name: "p1",
      subresource: "status",
    },
  });
  assert.deepEqual(r("GET", "/api/v1/namespaces/ns1"), {
    kind: "resource",
    request: {
      verb: "get",
      group: "",
      version: "v1",
      resource: "namespaces",
      namespace: "",
      namespaceInPath: false,
      name: "ns1",
      subresource: "",
    },
  });
  assert.deepEqual(r("PUT", "/api/v1/namespaces/ns1/finalize"), {
    kind: "resource",
    request: {
      verb: "update",
      group: "",
      version: "v1",
      resource: "namespaces",
      namespace: "",
      namespaceInPath: false,
      name: "ns1",
      subresource: "finalize",
    },
  });
  const list = r("GET", "/apis/storage.k8s.io/v1/storageclasses");
  assert.equal(list.kind === "resource" && list.request.verb, "list");
  const watch = r("GET", "/api/v1/watch/namespaces/ns/pods");
  assert.equal(watch.kind === "resource" && watch.request.verb, "watch");
  const watchParam = r("GET", "/api/v1/pods", true);
  assert.equal(watchParam.kind === "resource" && watchParam.request.verb, "watch");
  const collection = r("DELETE", "/api/v1/namespaces/ns/pods");
  assert.equal(collection.kind === "resource" && collection.request.verb, "deletecollection");
  assert.deepEqual(r("GET", "/apis"), { kind: "groupList" });
  assert.deepEqual(r("GET", "/apis/storage.k8s.io"), { kind: "group", group: "storage.k8s.io" });
  assert.deepEqual(r("GET", "/apis/storage.k8s.io/v1"), {
    kind: "resourceList",
    group: "storage.k8s.io",
    version: "v1",
  });
  assert.deepEqual(r("GET", "/api"), { kind: "coreVersions" });
  assert.deepEqual(r("GET", "/version"), { kind: "version" });
  assert.deepEqual(r("GET", "/healthz"), { kind: "health", check: "healthz" });
  for (const bad of [
    "/",
    "/foo",
    "/api/v1/namespaces/ns/pods/p/status/extra",
    "/api/v1/pods/%zz",
    "/api//v1",
  ]) {
    assert.deepEqual(r("GET", bad), { kind: "notFound" }, bad);
  }
  assert.deepEqual(r("TRACE", "/api/v1/pods"), { kind: "notFound" });
});
