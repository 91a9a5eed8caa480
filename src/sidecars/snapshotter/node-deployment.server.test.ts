// Distributed snapshotting (--node-deployment): one sidecar per node beside that node's driver
// instance, each handling only the contents the snapshot-controller labelled
// snapshot.storage.kubernetes.io/managed-by=<its NODE_NAME>. Two scripted driver instances of
// one driver name (real gRPC), the upstream-behaving stand-in controller with distributed
// snapshotting on, and the flag rules upstream enforces at start.

import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { Flags, FlagError, LOGGING_FLAGS, parseFlags } from "../../base/index.ts";
import {
  SCRIPTED,
  contentOf,
  createBoundClaim,
  createSnapshotClass,
  createVolumeSnapshot,
  runSnapshotter,
  startCluster,
  startScriptedSnapshots,
  startSnapshotControllerStandIn,
} from "../../../test/harness/snapshotter.ts";
import { installSnapshotCrds } from "../../../test/harness/snapshots.ts";
import { until } from "../../../test/harness/until.ts";
import { SNAPSHOTTER_FLAGS, snapshotterOptionsFromFlags } from "./flags.ts";

test("--node-deployment: each node's sidecar cuts only the snapshots of its node's volumes", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  await mkdir(join(cluster.dir, "a"));
  await mkdir(join(cluster.dir, "b"));
  const driverA = await startScriptedSnapshots(t, join(cluster.dir, "a"));
  const driverB = await startScriptedSnapshots(t, join(cluster.dir, "b"));
  await createSnapshotClass(client, "scripted", { driver: SCRIPTED });
  await createBoundClaim(client, "on-a", { driver: SCRIPTED, volumeHandle: "vol-a", node: "node-a" });
  await createBoundClaim(client, "on-b", { driver: SCRIPTED, volumeHandle: "vol-b", node: "node-b" });
  startSnapshotControllerStandIn(t, client, { distributed: true });
  runSnapshotter(t, cluster, driverA.path, ["--node-deployment"], { NODE_NAME: "node-a" });
  runSnapshotter(t, cluster, driverB.path, ["--node-deployment"], { NODE_NAME: "node-b" });
  await createVolumeSnapshot(client, "snap-a", { claim: "on-a", className: "scripted" });
  await createVolumeSnapshot(client, "snap-b", { claim: "on-b", className: "scripted" });
  for (const [name, node] of [
    ["snap-a", "node-a"],
    ["snap-b", "node-b"],
  ] as const) {
    const content = await until(
      async () => {
        const found = await contentOf(client, name);
        return found?.status?.readyToUse ? found : undefined;
      },
      `${name} ready`,
      { timeoutMs: 30_000 },
    );
    assert.equal(content.metadata.labels?.["snapshot.storage.kubernetes.io/managed-by"], node);
  }
  assert.deepEqual(
    driverA.creates.map((c) => c.sourceVolumeId),
    ["vol-a"],
    "node-a's sidecar called only its own driver instance, for its own volume",
  );
  assert.deepEqual(
    driverB.creates.map((c) => c.sourceVolumeId),
    ["vol-b"],
  );
});

test("--node-deployment needs NODE_NAME and excludes --leader-election, as upstream", () => {
  const parse = (argv: string[], env: NodeJS.ProcessEnv) =>
    snapshotterOptionsFromFlags(new Flags(parseFlags({ ...LOGGING_FLAGS, ...SNAPSHOTTER_FLAGS }, argv)), env);
  assert.throws(() => parse(["--node-deployment"], {}), FlagError);
  assert.throws(
    () => parse(["--node-deployment", "--leader-election"], { NODE_NAME: "n" }),
    /Leader election cannot happen when node-deployment is set to true/,
  );
  const options = parse(["--node-deployment"], { NODE_NAME: "node-1" });
  assert.deepEqual(options.nodeDeployment, { enabled: true, nodeName: "node-1" });
});
