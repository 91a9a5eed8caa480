// `up`'s component table with --feature-gates: CSI migration's gates reach the components whose
// upstream twins read them (controllers, every node agent) and no sidecar or driver (upstream's
// sidecars refuse gates they do not know); without the flag nothing changes.

import assert from "node:assert/strict";
import { test } from "node:test";
import { faultProxyEndpoints, planComponents, type ClusterPlan } from "./components.ts";
import { ClusterLayout, nodeSpecs } from "./layout.ts";

function plan(featureGates: string): ClusterPlan {
  const nodes = nodeSpecs(2);
  return {
    layout: new ClusterLayout("/tmp/csikit-plan"),
    nodes,
    driverName: "ebs.csi.aws.com",
    commands: new Set(["attacher", "registrar", "livenessprobe", "resizer"]),
    verbosity: 2,
    featureGates,
    ports: new Map(nodes.map((n, i) => [`${n.name}-livenessprobe`, 9800 + i])),
  };
}

const gated = (featureGates: string): string[] =>
  planComponents(plan(featureGates))
    .instances.filter((i) => i.args.some((a) => a.startsWith("--feature-gates=CSIMigration")))
    .map((i) => i.name);

test("--feature-gates goes to the controllers and every node agent, nothing else", () => {
  const gates = "CSIMigrationPortworx=false,InTreePluginPortworxUnregister=false";
  assert.deepEqual(gated(gates).sort(), ["controllers", "node-1", "node-2"]);
  const { instances } = planComponents(plan(gates));
  const controllers = instances.find((i) => i.name === "controllers")!;
  assert.ok(controllers.args.includes(`--feature-gates=${gates}`), controllers.args.join(" "));
  // The provisioner keeps its own sidecar gate, and only that.
  const provisioner = instances.find((i) => i.name === "provisioner")!;
  assert.deepEqual(
    provisioner.args.filter((a) => a.startsWith("--feature-gates")),
    ["--feature-gates=Topology=true,VolumeAttributesClass=true"],
  );
});

test("--kubernetes-version reaches the controllers and every node agent (the sidecars follow the API server)", () => {
  const { instances } = planComponents({ ...plan(""), kubernetesMinor: "1.34" });
  const versioned = instances.filter((i) => i.args.includes("--kubernetes-version=1.34")).map((i) => i.name);
  assert.deepEqual(versioned.sort(), ["controllers", "node-1", "node-2"]);
  // Unset, no component is told a release: each keeps its default.
  assert.ok(
    !planComponents(plan("")).instances.some((i) => i.args.some((a) => a.startsWith("--kubernetes-version"))),
  );
});

test("without --feature-gates no component gets a migration gate; the driver runs under --driver-name", () => {
  assert.deepEqual(gated(""), []);
  const { instances } = planComponents(plan(""));
  const drivers = instances.filter((i) => i.stage === "driver");
  assert.equal(drivers.length, 3);
  for (const driver of drivers) assert.ok(driver.args.includes("--drivername=ebs.csi.aws.com"), driver.name);
  const node = instances.find((i) => i.name === "node-1-driver")!;
  assert.ok(
    node.args.includes("--endpoint=unix:///tmp/csikit-plan/nodes/node-1/plugins/ebs.csi.aws.com/csi.sock"),
  );
});

test("hostpath standing in for a migrated plugin's driver runs without topology, its volumes on the first node", () => {
  const { instances } = planComponents(plan(""));
  for (const driver of instances.filter((i) => i.stage === "driver"))
    assert.ok(driver.args.includes("--enable-topology=false"), driver.name);
  assert.ok(instances.find((i) => i.name === "driver")!.args.includes("--nodeid=node-1"));
  // The default driver keeps its topology and its own controller node ID.
  const own = planComponents({ ...plan(""), driverName: "hostpath.csi.k8s.io" }).instances;
  for (const driver of own.filter((i) => i.stage === "driver"))
    assert.ok(!driver.args.includes("--enable-topology=false"), driver.name);
  assert.ok(own.find((i) => i.name === "driver")!.args.includes("--nodeid=controller"));
});

test("--driver-fault-proxy: a fault proxy serves each driver's socket and forwards to the driver beside it", () => {
  const base = { ...plan(""), driverName: "hostpath.csi.k8s.io", commands: new Set(["fault-proxy"]) };
  const plain = planComponents(base).instances;
  const proxied = planComponents({ ...base, driverFaultProxy: true }).instances;
  const proxies = proxied.filter((i) => i.subcommand === "fault-proxy");
  assert.deepEqual(
    proxies.map((i) => i.name),
    ["driver-fault-proxy", "node-1-driver-fault-proxy", "node-2-driver-fault-proxy"],
  );
  // Each rules API on the port the plan chose, so a restarted proxy is found where it was.
  const ports = new Map(proxies.map((p, i) => [p.name, 9900 + i]));
  const withPorts = { ...base, driverFaultProxy: true, ports };
  for (const proxy of planComponents(withPorts).instances.filter((i) => i.subcommand === "fault-proxy"))
    assert.ok(proxy.args.includes(`--api-address=127.0.0.1:${ports.get(proxy.name)}`), proxy.args.join(" "));
  assert.deepEqual(
    faultProxyEndpoints(withPorts).map((e) => e.url),
    ["http://127.0.0.1:9900/rules", "http://127.0.0.1:9901/rules", "http://127.0.0.1:9902/rules"],
  );
  for (const driver of plain.filter((i) => i.stage === "driver")) {
    // The socket every client (sidecars, registrar, kubelet) uses is the proxy's now.
    const endpoint = driver.args
      .find((a) => a.startsWith("--endpoint=unix://"))!
      .slice("--endpoint=unix://".length);
    const proxy = proxies.find((i) => i.args.includes(`--listen=${endpoint}`));
    assert.ok(proxy, `a proxy serves ${endpoint}`);
    assert.equal(proxy.node, driver.node);
    const behind = proxy.args.find((a) => a.startsWith("--csi-address="))!.slice("--csi-address=".length);
    assert.match(behind, /\/driver-(csi|controller)\.sock$/);
    const moved = proxied.find((i) => i.name === driver.name)!;
    assert.ok(moved.args.includes(`--endpoint=unix://${behind}`), moved.args.join(" "));
  }
  // Nothing else changes: the same components with the same arguments.
  const others = (instances: typeof plain) =>
    instances.filter((i) => i.stage !== "driver").map((i) => [i.name, i.args.join(" ")]);
  assert.deepEqual(others(proxied), others(plain));
  // A user's driver command gets the moved endpoint in {endpoint} too.
  const user = planComponents({
    ...base,
    driverFaultProxy: true,
    driverCommand: "mydriver --csi={endpoint}",
  }).instances;
  assert.ok(user.find((i) => i.name === "driver")!.args.some((a) => a.endsWith("/driver-controller.sock")));
});

test("the health monitor runs beside hostpath's controller with the node watcher; the node agents get CSIVolumeHealth=true unless the plan sets it", () => {
  const withMonitor = {
    ...plan(""),
    commands: new Set(["attacher", "registrar", "livenessprobe", "health-monitor"]),
  };
  const { instances } = planComponents(withMonitor);
  const monitor = instances.find((i) => i.name === "health-monitor")!;
  assert.equal(monitor.subcommand, "health-monitor");
  assert.equal(monitor.stage, "sidecar");
  assert.deepEqual(monitor.identity, {
    kind: "serviceAccount",
    namespace: "default",
    name: "csi-external-health-monitor-controller",
  });
  assert.ok(monitor.args.includes("--enable-node-watcher"), monitor.args.join(" "));
  assert.ok(monitor.args.some((a) => a.startsWith("--csi-address=")));
  for (const node of instances.filter((i) => i.stage === "node" && i.subcommand === "node"))
    assert.ok(node.args.includes("--feature-gates=CSIVolumeHealth=true"), node.args.join(" "));
  // A user's driver may lack VOLUME_CONDITION (upstream's monitor exits then): no monitor.
  assert.equal(
    planComponents({ ...withMonitor, driverSocket: "/tmp/user.sock" }).instances.some(
      (i) => i.name === "health-monitor",
    ),
    false,
  );
  // Without the command in this checkout, none either.
  assert.equal(
    planComponents(plan("")).instances.some((i) => i.name === "health-monitor"),
    false,
  );
  // The plan's own value wins; other gates are kept.
  const off = planComponents(plan("CSIMigrationPortworx=false,CSIVolumeHealth=false")).instances;
  assert.ok(
    off
      .find((i) => i.name === "node-1")!
      .args.includes("--feature-gates=CSIMigrationPortworx=false,CSIVolumeHealth=false"),
  );
  const kept = planComponents(plan("CSIMigrationPortworx=false")).instances;
  assert.ok(
    kept
      .find((i) => i.name === "node-1")!
      .args.includes("--feature-gates=CSIMigrationPortworx=false,CSIVolumeHealth=true"),
  );
  assert.ok(
    kept.find((i) => i.name === "controllers")!.args.includes("--feature-gates=CSIMigrationPortworx=false"),
  );
});
