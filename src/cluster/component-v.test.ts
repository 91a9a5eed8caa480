// `up --component-v=N` is the -v of every csikit process of the cluster, the API server too (its
// request log is at 5): each planned command line carries it exactly once.

import assert from "node:assert/strict";
import { test } from "node:test";
import { apiServerInstance } from "./cluster.ts";
import { kubeRelease } from "../api/index.ts";
import { planComponents, type ClusterPlan } from "./components.ts";
import { ClusterLayout, nodeSpecs } from "./layout.ts";

function plan(): ClusterPlan {
  const nodes = nodeSpecs(2);
  return {
    layout: new ClusterLayout("/tmp/csikit-plan"),
    nodes,
    driverName: "hostpath.csi.k8s.io",
    commands: new Set(["attacher", "registrar", "livenessprobe", "resizer"]),
    verbosity: 7,
    featureGates: "",
    ports: new Map(nodes.map((n, i) => [`${n.name}-livenessprobe`, 9800 + i])),
  };
}

test("--component-v reaches every csikit component, the API server included", () => {
  const layout = new ClusterLayout("/tmp/csikit-plan");
  const instances = [...planComponents(plan()).instances, apiServerInstance(layout, 6443, 7)];
  const csikit = instances.filter((i) => i.subcommand !== undefined);
  assert.ok(csikit.some((i) => i.name === "apiserver"));
  for (const instance of csikit)
    assert.deepEqual(
      instance.args.filter((a) => /^--?v=/.test(a)),
      ["--v=7"],
      `${instance.name}: ${instance.args.join(" ")}`,
    );
});

test("up --kubernetes-version reaches the API server's command line (default 1.37)", () => {
  const layout = new ClusterLayout("/tmp/csikit-plan");
  const release = (instance: { args: readonly string[] }) =>
    instance.args.filter((a) => a.startsWith("--kubernetes-version"));
  assert.deepEqual(release(apiServerInstance(layout, 6443, 2)), ["--kubernetes-version=1.37"]);
  assert.deepEqual(release(apiServerInstance(layout, 6443, 2, kubeRelease("1.33"))), [
    "--kubernetes-version=1.33",
  ]);
});
