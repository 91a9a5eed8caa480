// Leader failover of the snapshotter: two sidecars for one driver under leader election on the
// Lease upstream names `external-snapshotter-leader-<driver>` (sanitized). The leader runs as a
// real child process and is killed with SIGKILL (a crashed pod: the Lease is not released); the
// standby takes the Lease over once it expires and cuts the snapshot created after. The contents
// come from the stand-in of upstream's snapshot-controller.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  FAST_ELECTION,
  leaseHolder,
  startChildLeader,
  untilNewLeader,
} from "../../../test/harness/election.ts";
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

const LEASE = "external-snapshotter-leader-scripted-snapshotter-csikit-io";

test("leader killed with SIGKILL: the standby takes the Lease over and cuts the next snapshot", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  await createSnapshotClass(client, "scripted", { driver: SCRIPTED });
  await createBoundClaim(client, "before", { driver: SCRIPTED, volumeHandle: "vol-before" });
  await createBoundClaim(client, "after", { driver: SCRIPTED, volumeHandle: "vol-after" });
  startSnapshotControllerStandIn(t, client);
  const ready = (snapshot: string) =>
    until(
      async () => {
        const content = await contentOf(client, snapshot);
        return content?.status?.readyToUse ? content : undefined;
      },
      `${snapshot} cut and ready`,
      { timeoutMs: 30_000 },
    );

  const leader = await startChildLeader(t, {
    sidecar: "snapshotter",
    csiAddress: driver.path,
    kubeconfig: cluster.kubeconfig,
    client,
    lease: LEASE,
  });
  const standby = runSnapshotter(t, cluster, driver.path, FAST_ELECTION);
  await createVolumeSnapshot(client, "before", { claim: "before", className: "scripted" });
  await ready("before");
  assert.equal(await leaseHolder(client, LEASE), leader.identity, "the child still leads");
  assert.deepEqual(
    driver.creates.map((c) => c.sourceVolumeId),
    ["vol-before"],
    "cut once, by the leader: the standby does nothing while it does not lead",
  );

  await leader.kill();
  const next = await untilNewLeader(client, LEASE, leader.identity);
  assert.notEqual(next, leader.identity);
  await createVolumeSnapshot(client, "after", { claim: "after", className: "scripted" });
  await ready("after").catch((error: unknown) => {
    t.diagnostic(standby.logs.slice(-30).join("\n"));
    throw error;
  });
  assert.deepEqual(
    driver.creates.map((c) => c.sourceVolumeId),
    ["vol-before", "vol-after"],
  );
});
