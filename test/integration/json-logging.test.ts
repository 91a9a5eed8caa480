// JSON logging as csi-lib-utils' standard flags give every sidecar (component-base's
// --logging-format=json): each sidecar `csikit up` runs — provisioner, attacher, resizer,
// snapshotter, node-driver-registrar and livenessprobe — started with up's command line, its own
// identity under deploy/rbac/, and `--logging-format=json -v=5`, writes nothing but JSON lines
// (one object per line, with ts and msg) on stdout and stderr, from start-up through its work to
// the SIGTERM that stops it.

import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { test } from "node:test";
import { ClusterLayout, nodeSpecs, planComponents } from "../../src/cluster/index.ts";
import { installSnapshotCrds } from "../harness/snapshots.ts";
import { spawnComponent, startRbacCluster, type RunningComponent } from "../harness/rbac.ts";
import { until } from "../harness/until.ts";

const DRIVER = "hostpath.csi.k8s.io";
const SIDECARS = [
  "provisioner",
  "attacher",
  "resizer",
  "snapshotter",
  "node-1-registrar",
  "node-1-livenessprobe",
] as const;

/** The lines of `output` that are not one JSON object with a string ts and msg. */
function nonJsonLines(output: string): string[] {
  return output
    .split("\n")
    .filter((line) => line !== "")
    .filter((line) => {
      try {
        const parsed = JSON.parse(line) as unknown;
        return !(
          typeof parsed === "object" &&
          parsed !== null &&
          typeof (parsed as { ts?: unknown }).ts === "string" &&
          typeof (parsed as { msg?: unknown }).msg === "string"
        );
      } catch {
        return true;
      }
    });
}

test("every sidecar with --logging-format=json writes only JSON lines, start-up to shutdown", async (t) => {
  const nodes = nodeSpecs(1);
  const plan = (layout: ClusterLayout) =>
    planComponents({
      layout,
      nodes,
      driverName: DRIVER,
      commands: new Set(["attacher", "resizer", "snapshotter", "registrar", "livenessprobe"]),
      verbosity: 2,
      featureGates: "",
      ports: new Map(),
    }).instances;
  const rbac = await startRbacCluster(t);
  await rbac.layout.create();
  await installSnapshotCrds(rbac.admin);
  const instances = plan(rbac.layout);
  await mkdir(rbac.layout.socketsDir, { recursive: true, mode: 0o700 });
  const byName = (name: string) => {
    const instance = instances.find((i) => i.name === name);
    assert.ok(instance, `up runs ${name}`);
    return instance;
  };
  await mkdir(rbac.layout.registrationDirOf("node-1"), { recursive: true, mode: 0o700 });
  for (const name of ["driver", "node-1-driver"]) spawnComponent(t, byName(name));

  const running: RunningComponent[] = [];
  for (const name of SIDECARS) {
    const instance = byName(name);
    if (instance.identity) await rbac.componentKubeconfig(instance.name, instance.identity);
    const args = [
      ...instance.args.filter((arg) => !/^--?(v|log-format|logging-format)=/.test(arg)),
      "--logging-format=json",
      "-v=5",
    ];
    running.push(spawnComponent(t, { ...instance, args }, { ...instance.env }));
  }
  // Each has started and is talking to its driver (a few lines at -v=5).
  for (const component of running)
    await until(
      () => component.output().split("\n").filter(Boolean).length >= 2,
      `${component.name} logging`,
      { timeoutMs: 60_000 },
    );
  for (const component of running) await component.stop();
  for (const component of running)
    assert.deepEqual(nonJsonLines(component.output()), [], `${component.name}:\n${component.output()}`);
});
