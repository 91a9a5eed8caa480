import { test } from "node:test";
import assert from "node:assert/strict";
import { createBuiltinRegistry } from "./registry.ts";
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
    ["status:Pod:get|patch|update", "binding:Binding:create"],
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
