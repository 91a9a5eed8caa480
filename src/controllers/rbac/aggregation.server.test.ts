// The ClusterRole aggregation loop against the real API server: an aggregating role's stored
// rules follow the roles its selectors match (added, changed, deleted), in upstream's order
// and without duplicates; a role without an aggregationRule is never touched.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { isDeepStrictEqual } from "node:util";
import { GVR, type ClusterRole, type PolicyRule } from "../../api/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import { runLoops, startTestServer, type TestServer } from "../../../test/harness/controllers.ts";
import { aggregatedRules } from "./aggregation.ts";
import { until } from "../../../test/harness/until.ts";

let env: TestServer;
let client: KubeClient;
before(async () => {
  env = await startTestServer();
  client = env.client();
});
after(async () => {
  await env?.stop();
});

const LABEL = "rbac.example.com/aggregate-to-monitoring";
const read = (verbs: string[], resources: string[]): PolicyRule => ({ verbs, apiGroups: [""], resources });

function role(name: string, extra: Partial<ClusterRole> = {}): ClusterRole {
  return { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, ...extra };
}

async function rulesOf(name: string): Promise<PolicyRule[]> {
  return (await client.get<ClusterRole>(GVR.clusterRoles, name)).rules ?? [];
}

test("aggregatedRules: selectors in order, matches by name, equal rules once, itself skipped", () => {
  const parent = role("parent", {
    metadata: { name: "parent", labels: { a: "1" } },
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: "1" } }, { matchLabels: { b: "1" } }] },
    rules: [read(["delete"], ["secrets"])],
  });
  const all = [
    parent,
    role("zeta", { metadata: { name: "zeta", labels: { a: "1" } }, rules: [read(["get"], ["pods"])] }),
    role("alpha", {
      metadata: { name: "alpha", labels: { a: "1", b: "1" } },
      rules: [read(["list"], ["nodes"]), read(["get"], ["pods"])],
    }),
    role("beta", { metadata: { name: "beta", labels: { b: "1" } }, rules: [read(["watch"], ["nodes"])] }),
    role("other", { metadata: { name: "other", labels: { c: "1" } }, rules: [read(["*"], ["*"])] }),
  ];
  assert.deepEqual(aggregatedRules(parent, all), [
    read(["list"], ["nodes"]),
    read(["get"], ["pods"]),
    read(["watch"], ["nodes"]),
  ]);
});

test("the loop keeps an aggregating ClusterRole's stored rules in step with the roles it selects", async () => {
  const loops = runLoops(client, { controllers: ["clusterrole-aggregation-controller"] });
  try {
    await client.create(
      GVR.clusterRoles,
      role("monitoring", {
        aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [LABEL]: "true" } }] },
      }),
    );
    await client.create(GVR.clusterRoles, role("plain", { rules: [read(["get"], ["configmaps"])] }));
    await client.create(
      GVR.clusterRoles,
      role("monitoring-pods", {
        metadata: { name: "monitoring-pods", labels: { [LABEL]: "true" } },
        rules: [read(["get", "list"], ["pods"])],
      }),
    );
    await until(
      async () => isDeepStrictEqual(await rulesOf("monitoring"), [read(["get", "list"], ["pods"])]),
      "the first selected role's rules aggregated",
    );
    // A second selected role: its rules follow, by name order.
    await client.create(
      GVR.clusterRoles,
      role("monitoring-nodes", {
        metadata: { name: "monitoring-nodes", labels: { [LABEL]: "true" } },
        rules: [read(["watch"], ["nodes"])],
      }),
    );
    await until(
      async () =>
        isDeepStrictEqual(await rulesOf("monitoring"), [
          read(["watch"], ["nodes"]),
          read(["get", "list"], ["pods"]),
        ]),
      "both selected roles aggregated",
    );
    // Deleting one takes its rules away again.
    await client.delete(GVR.clusterRoles, "monitoring-nodes");
    await until(
      async () => isDeepStrictEqual(await rulesOf("monitoring"), [read(["get", "list"], ["pods"])]),
      "the deleted role's rules removed",
    );
    assert.deepEqual(await rulesOf("plain"), [read(["get"], ["configmaps"])]);
  } finally {
    await loops.stop();
  }
});
