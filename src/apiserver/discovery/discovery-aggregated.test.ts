import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBuiltinRegistry } from "../registry.ts";
import {
  AGGREGATED_DISCOVERY_V2,
  aggregatedDiscovery,
  aggregatedDiscoveryVersion,
} from "./discovery-aggregated.ts";

interface Resource {
  resource: string;
  scope: string;
  shortNames?: string[];
  categories?: string[];
  verbs: string[];
  singularResource: string;
  responseKind: { group: string; version: string; kind: string };
  subresources?: { subresource: string; verbs: string[]; responseKind: { kind: string } }[];
}
interface Item {
  metadata: { name?: string };
  versions: { version: string; resources: Resource[]; freshness: string }[];
}

function resources(document: Record<string, unknown>): Map<string, Resource> {
  const out = new Map<string, Resource>();
  for (const item of document.items as Item[]) {
    for (const version of item.versions) {
      for (const resource of version.resources)
        out.set(`${item.metadata.name ?? ""}/${resource.resource}`, resource);
    }
  }
  return out;
}

test("accept header negotiation as kubectl sends it", () => {
  const kubectl = `${AGGREGATED_DISCOVERY_V2},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json`;
  assert.equal(aggregatedDiscoveryVersion(kubectl), "v2");
  assert.equal(
    aggregatedDiscoveryVersion("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
    "v2beta1",
  );
  assert.equal(aggregatedDiscoveryVersion("application/json"), undefined);
  assert.equal(aggregatedDiscoveryVersion(undefined), undefined);
});

test("/api and /apis aggregated documents carry what kubectl resolves names from", () => {
  const registry = createBuiltinRegistry();
  const core = aggregatedDiscovery(registry, "api");
  assert.equal(core.kind, "APIGroupDiscoveryList");
  assert.equal(core.apiVersion, "apidiscovery.k8s.io/v2");
  const coreItems = core.items as Item[];
  assert.equal(coreItems.length, 1);
  assert.equal(coreItems[0]?.metadata.name, undefined);
  const named = aggregatedDiscovery(registry, "apis");
  const all = new Map([...resources(core), ...resources(named)]);
  const expectations: [string, string, string[]][] = [
    ["/persistentvolumes", "Cluster", ["pv"]],
    ["/persistentvolumeclaims", "Namespaced", ["pvc"]],
    ["/pods", "Namespaced", ["po"]],
    ["/nodes", "Cluster", ["no"]],
    ["/namespaces", "Cluster", ["ns"]],
    ["/events", "Namespaced", ["ev"]],
    ["/configmaps", "Namespaced", ["cm"]],
    ["/serviceaccounts", "Namespaced", ["sa"]],
    ["storage.k8s.io/storageclasses", "Cluster", ["sc"]],
    ["storage.k8s.io/volumeattachments", "Cluster", []],
    ["storage.k8s.io/csinodes", "Cluster", []],
    ["storage.k8s.io/csidrivers", "Cluster", []],
    ["storage.k8s.io/csistoragecapacities", "Namespaced", []],
    ["coordination.k8s.io/leases", "Namespaced", []],
    ["events.k8s.io/events", "Namespaced", ["ev"]],
    ["apiextensions.k8s.io/customresourcedefinitions", "Cluster", ["crd", "crds"]],
  ];
  for (const [key, scope, shortNames] of expectations) {
    const resource = all.get(key);
    assert.ok(resource, key);
    assert.equal(resource.scope, scope, key);
    assert.deepEqual(resource.shortNames ?? [], shortNames, key);
  }
  assert.deepEqual(all.get("/pods")?.categories, ["all"]);
  assert.deepEqual(
    all
      .get("/pods")
      ?.subresources?.map((s) => `${s.subresource}:${s.responseKind.kind}:${s.verbs.join("|")}`),
    [
      "status:Pod:get|patch|update",
      "binding:Binding:create",
      "log:Pod:get",
      "exec:PodExecOptions:create|get",
    ],
  );
  assert.deepEqual(all.get("/persistentvolumes")?.verbs, [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
  ]);
  assert.equal(all.get("storage.k8s.io/storageclasses")?.singularResource, "storageclass");
  assert.deepEqual(all.get("storage.k8s.io/volumeattachments")?.responseKind, {
    group: "storage.k8s.io",
    version: "v1",
    kind: "VolumeAttachment",
  });
});

test("kubectl api-resources reads the aggregated documents", async (t) => {
  const registry = createBuiltinRegistry();
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.url ?? ""} ${req.headers.accept ?? ""}`);
    const path = (req.url ?? "").split("?")[0];
    const version = aggregatedDiscoveryVersion(req.headers.accept);
    if ((path === "/api" || path === "/apis") && version !== undefined) {
      res.writeHead(200, { "Content-Type": AGGREGATED_DISCOVERY_V2 });
      res.end(JSON.stringify(aggregatedDiscovery(registry, path === "/api" ? "api" : "apis", version)));
      return;
    }
    res.writeHead(404, { "Content-Type": "application/json" });
    res.end(
      JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  const dir = await mkdtemp(join(tmpdir(), "csikit-discovery-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, "kubeconfig");
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server: `http://127.0.0.1:${address.port}` } }],
      users: [{ name: "u", user: {} }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  const output = await new Promise<string>((resolve, reject) => {
    execFile(
      "kubectl",
      [
        "--kubeconfig",
        kubeconfig,
        "--cache-dir",
        join(dir, "cache"),
        "api-resources",
        "--no-headers",
        "-o",
        "wide",
      ],
      { timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    );
  }).catch((error: unknown) => {
    if (error instanceof Error && /ENOENT/.test(error.message)) return undefined;
    throw error;
  });
  if (output === undefined) {
    t.skip("kubectl is not installed");
    return;
  }
  const lines = output
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/));
  const find = (name: string) => lines.find((cells) => cells[0] === name);
  assert.deepEqual(find("persistentvolumeclaims")?.slice(0, 5), [
    "persistentvolumeclaims",
    "pvc",
    "v1",
    "true",
    "PersistentVolumeClaim",
  ]);
  assert.deepEqual(find("storageclasses")?.slice(0, 5), [
    "storageclasses",
    "sc",
    "storage.k8s.io/v1",
    "false",
    "StorageClass",
  ]);
  assert.deepEqual(find("csinodes")?.slice(0, 4), ["csinodes", "storage.k8s.io/v1", "false", "CSINode"]);
  assert.ok(find("pods")?.includes("all"), "pods are in category all");
  // one request each for /api and /apis: no per-group-version fallback
  assert.equal(
    requests.filter((r) => r.startsWith("/apis/") || r.startsWith("/api/")).length,
    0,
    requests.join("\n"),
  );
});
