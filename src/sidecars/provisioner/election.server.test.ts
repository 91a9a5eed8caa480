// Leader election and diagnostics: the Lease is named after the driver (sanitized); when the
// leader is killed with SIGKILL a standby takes over once the lease expires and provisions what
// is left, with no volume created twice. The HTTP endpoint serves the CSI, provisioning and
// work-queue metrics, /healthz/leader-election and, with --enable-pprof, heap and CPU profiles.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  STUB,
  createClaim,
  createClass,
  runProvisioner,
  startCluster,
  startStub,
  waitForVolume,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";
import {
  FAST_ELECTION,
  leaseHolder,
  startChildLeader,
  untilNewLeader,
} from "../../../test/harness/election.ts";

const LEASE = "stub-csi-csikit-io";

test(
  "leader killed with SIGKILL: the standby takes over within the lease duration; no volume twice",
  { timeout: 120_000 },
  async (t) => {
    const cluster = await startCluster(t);
    const stub = await startStub(t, cluster.dir);
    await createClass(cluster, "sc", STUB);
    const leader = await startChildLeader(t, {
      sidecar: "provisioner",
      csiAddress: stub.server.path,
      kubeconfig: cluster.kubeconfig,
      client: cluster.client,
      lease: LEASE,
    });
    const first = leader.identity;
    runProvisioner(t, cluster, stub.server.path, FAST_ELECTION);
    const c1 = await createClaim(cluster, "c1", STUB);
    await waitForVolume(cluster, c1);
    assert.equal(await leaseHolder(cluster.client, LEASE), first, "the child still leads");
    await leader.kill();
    const killedAt = Date.now();
    const c2 = await createClaim(cluster, "c2", STUB);
    const second = await untilNewLeader(cluster.client, LEASE, first);
    await waitForVolume(cluster, c2);
    const takeover = Date.now() - killedAt;
    t.diagnostic(`takeover + provisioning after SIGKILL: ${takeover} ms (lease duration 3000 ms)`);
    assert.notEqual(second, first);
    assert.equal(stub.volumes.size, 2, "two claims, two volumes");
    assert.deepEqual(new Set(stub.creates.map((c) => c.name)).size, 2);
  },
);

test("metrics, /healthz/leader-election and pprof on the HTTP endpoint", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  const provisioner = runProvisioner(t, cluster, stub.server.path, [
    ...FAST_ELECTION,
    "--http-endpoint=127.0.0.1:0",
    "--enable-pprof",
  ]);
  const claim = await createClaim(cluster, "m", STUB);
  await waitForVolume(cluster, claim);
  const url = await until(() => provisioner.url, "endpoint");
  // The claim's metrics are recorded after the PV is written: wait for them, bounded.
  const metrics = await until(async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return /controller_persistentvolumeclaim_provision_total\{class="sc",source=""\} 1/.test(text) && text;
  }, "the provision metrics");
  assert.match(
    metrics,
    /csi_sidecar_operations_seconds_count\{driver_name="stub.csi.csikit.io",method_name="\/csi.v1.Controller\/CreateVolume",grpc_status_code="OK"\} 1/,
  );
  assert.match(metrics, /controller_persistentvolumeclaim_provision_total\{class="sc",source=""\} 1/);
  assert.match(metrics, /controller_persistentvolumeclaim_provision_duration_seconds_count/);
  assert.match(metrics, /controller_persistentvolume_delete_total/);
  assert.match(metrics, /workqueue_adds_total\{name="claims"\} \d+/);
  assert.match(metrics, /workqueue_depth\{name="volumes"\}/);
  const health = await fetch(`${url}/healthz/leader-election`);
  assert.equal(health.status, 200);
  const heap: unknown = await (await fetch(`${url}/debug/pprof/heap`)).json();
  assert.ok(typeof heap === "object" && heap !== null && "snapshot" in heap, "a V8 heap snapshot");
  const cpu: unknown = await (await fetch(`${url}/debug/pprof/profile?seconds=0.2`)).json();
  assert.ok(typeof cpu === "object" && cpu !== null && "nodes" in cpu, "a V8 CPU profile");
  assert.equal((await fetch(`${url}/debug/pprof/nope`)).status, 404);
});
