// `up --distributed` plans upstream's distributed deployment: per node one driver instance
// serving both services with its own state, and a provisioner and a snapshotter beside it with
// --node-deployment (the snapshot-controller with --enable-distributed-snapshotting labels the
// contents each picks); no controller instance of the driver, no cluster-wide provisioner,
// attacher, resizer or snapshotter.

import assert from "node:assert/strict";
import { test } from "node:test";
import { planComponents, type ClusterPlan } from "./components.ts";
import { ClusterLayout, nodeSpecs } from "./layout.ts";

function plan(extra: Partial<ClusterPlan> = {}): ClusterPlan {
  const nodes = nodeSpecs(2);
  return {
    layout: new ClusterLayout("/tmp/csikit-plan"),
    nodes,
    driverName: "hostpath.csi.k8s.io",
    commands: new Set([
      "attacher",
      "registrar",
      "livenessprobe",
      "resizer",
      "snapshotter",
      "snapshot-controller",
      "snapshot-metadata",
    ]),
    verbosity: 2,
    featureGates: "",
    ports: new Map(nodes.map((n, i) => [`${n.name}-livenessprobe`, 9800 + i])),
    distributed: true,
    ...extra,
  };
}

test("distributed: a driver, a node-deployment provisioner and snapshotter per node, nothing cluster-wide between", () => {
  const { instances } = planComponents(plan());
  const names = instances.map((i) => i.name);
  for (const central of ["driver", "provisioner", "attacher", "resizer", "snapshotter", "snapshot-metadata"])
    assert.ok(!names.includes(central), `${central} in ${names.join(" ")}`);
  for (const node of ["node-1", "node-2"]) {
    const socket = `/tmp/csikit-plan/nodes/${node}/plugins/hostpath.csi.k8s.io/csi.sock`;
    const driver = instances.find((i) => i.name === `${node}-driver`)!;
    for (const arg of [
      "--controller-service=true",
      "--node-service=true",
      `--nodeid=${node}`,
      `--state-dir=/tmp/csikit-plan/hostpath/${node}`,
      `--endpoint=unix://${socket}`,
      "--enable-attach=false",
    ])
      assert.ok(driver.args.includes(arg), `${arg} in ${driver.args.join(" ")}`);
    const provisioner = instances.find((i) => i.name === `${node}-provisioner`)!;
    assert.equal(provisioner.subcommand, "provisioner");
    assert.equal(provisioner.node, node, "NODE_NAME comes from the instance's node");
    assert.deepEqual(provisioner.identity, {
      kind: "serviceAccount",
      namespace: "default",
      name: "csi-provisioner",
    });
    for (const arg of [
      `--csi-address=${socket}`,
      "--node-deployment=true",
      "--strict-topology=true",
      "--immediate-topology=false",
      "--feature-gates=Topology=true,VolumeAttributesClass=true",
      `--kubeconfig=/tmp/csikit-plan/identities/${node}-provisioner.kubeconfig`,
    ])
      assert.ok(provisioner.args.includes(arg), `${arg} in ${provisioner.args.join(" ")}`);
    const snapshotter = instances.find((i) => i.name === `${node}-snapshotter`)!;
    assert.equal(snapshotter.subcommand, "snapshotter");
    assert.equal(snapshotter.node, node, "NODE_NAME comes from the instance's node");
    assert.deepEqual(snapshotter.identity, {
      kind: "serviceAccount",
      namespace: "default",
      name: "csi-snapshotter",
    });
    for (const arg of [
      `--csi-address=${socket}`,
      "--node-deployment",
      `--kubeconfig=/tmp/csikit-plan/identities/${node}-snapshotter.kubeconfig`,
    ])
      assert.ok(snapshotter.args.includes(arg), `${arg} in ${snapshotter.args.join(" ")}`);
    assert.ok(
      !snapshotter.args.some((a) => a.startsWith("--leader-election")),
      "no election with --node-deployment",
    );
  }
  const snapshotController = instances.find((i) => i.name === "snapshot-controller")!;
  assert.ok(snapshotController.args.includes("--enable-distributed-snapshotting"));
  // Every node keeps its agent, registrar and probe.
  for (const name of ["node-1", "node-1-registrar", "node-1-livenessprobe", "controllers"])
    assert.ok(names.includes(name), name);
});

test("distributed with --driver-command: {mode} is distributed, {endpoint} the node's socket", () => {
  const { instances } = planComponents(plan({ driverCommand: "my-driver {endpoint} {nodeid} {mode}" }));
  const drivers = instances.filter((i) => i.stage === "driver");
  assert.deepEqual(
    drivers.map((d) => d.args),
    ["node-1", "node-2"].map((node) => [
      "my-driver",
      `/tmp/csikit-plan/nodes/${node}/plugins/hostpath.csi.k8s.io/csi.sock`,
      node,
      "distributed",
    ]),
  );
});
