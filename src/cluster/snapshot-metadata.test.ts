// `up` runs the snapshot-metadata service beside hostpath's controller only: with its key pair
// and a loopback gRPC port, the controller's hostpath serving SNAPSHOT_METADATA_SERVICE; not for
// a user's driver (which may not serve it), not distributed, not when the command is missing.

import assert from "node:assert/strict";
import { test } from "node:test";
import { planComponents, type ClusterPlan } from "./components.ts";
import { ClusterLayout, nodeSpecs } from "./layout.ts";

function plan(overrides: Partial<ClusterPlan> = {}): ClusterPlan {
  return {
    layout: new ClusterLayout("/tmp/csikit-plan"),
    nodes: nodeSpecs(1),
    driverName: "hostpath.csi.k8s.io",
    commands: new Set(["attacher", "snapshot-metadata"]),
    verbosity: 2,
    featureGates: "",
    ports: new Map([
      ["snapshot-metadata", 9100],
      ["snapshot-metadata-grpc", 9101],
    ]),
    ...overrides,
  };
}

test("the snapshot-metadata sidecar runs beside hostpath's controller, under its own account", () => {
  const { instances } = planComponents(plan());
  const sidecar = instances.find((i) => i.name === "snapshot-metadata");
  assert.ok(sidecar);
  assert.deepEqual(sidecar.identity, {
    kind: "serviceAccount",
    namespace: "default",
    name: "csi-snapshot-metadata",
  });
  for (const arg of [
    "--csi-address=/tmp/csikit-plan/sockets/controller.sock",
    "--port=9101",
    "--bind-address=127.0.0.1",
    "--tls-cert=/tmp/csikit-plan/pki/snapshot-metadata.crt",
    "--tls-key=/tmp/csikit-plan/pki/snapshot-metadata.key",
    "--http-endpoint=127.0.0.1:9100",
  ])
    assert.ok(sidecar.args.includes(arg), `${arg} in ${sidecar.args.join(" ")}`);
  const driver = instances.find((i) => i.name === "driver")!;
  assert.ok(driver.args.includes("--enable-snapshot-metadata"));
  assert.ok(!instances.find((i) => i.name === "node-1-driver")!.args.includes("--enable-snapshot-metadata"));
});

test("no snapshot-metadata for a user's driver, a distributed cluster, or a build without the command", () => {
  const without = (p: ClusterPlan) =>
    !planComponents(p).instances.some((i) => i.name === "snapshot-metadata");
  assert.ok(without(plan({ driverCommand: "my-driver --endpoint={endpoint}" })));
  assert.ok(without(plan({ driverSocket: "/tmp/some.sock" })));
  assert.ok(without(plan({ distributed: true })));
  const missing = planComponents(plan({ commands: new Set(["attacher"]) }));
  assert.ok(!missing.instances.some((i) => i.name === "snapshot-metadata"));
  assert.ok(missing.skipped.includes("snapshot-metadata"));
  assert.ok(!missing.instances.find((i) => i.name === "driver")!.args.includes("--enable-snapshot-metadata"));
});
