// Failover and restart in the middle of an expansion, and diagnostics. The intent written before
// ControllerExpandVolume (ControllerResizeInProgress + allocatedResources) is what the next
// leader or the restarted process finishes: the same size is asked for again (idempotent), so
// the volume grows once, to the requested size. The Lease is `external-resizer-<driver>`.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  MI,
  STUB,
  boundClaim,
  claimStatus,
  runResizer,
  setRequest,
  startCluster,
  startResizeStub,
  untilCancelled,
} from "../../../test/harness/resizer.ts";
import { until } from "../../../test/harness/until.ts";
import {
  FAST_ELECTION,
  leaseHolder,
  startChildLeader,
  untilNewLeader,
} from "../../../test/harness/election.ts";

const LEASE = "external-resizer-resize-stub-csi-csikit-io";

test(
  "leader killed with SIGKILL mid-expansion: the standby finishes the same size, the volume grows once",
  { timeout: 120_000 },
  async (t) => {
    const cluster = await startCluster(t);
    const stub = await startResizeStub(t, cluster.dir);
    stub.nodeExpansionRequired = false;
    // The first call hangs in the driver until its caller dies.
    stub.onExpand = async (_request, context) => {
      if (stub.expands.length === 1) await untilCancelled(context);
    };
    await boundClaim(cluster, { name: "f", driver: STUB, handle: "vol-f" });
    const leader = await startChildLeader(t, {
      sidecar: "resizer",
      csiAddress: stub.server.path,
      kubeconfig: cluster.kubeconfig,
      client: cluster.client,
      lease: LEASE,
    });
    const first = leader.identity;
    runResizer(t, cluster, stub.server.path, FAST_ELECTION);
    await setRequest(cluster, "f", "3Mi");
    await until(() => stub.expands.length === 1, "the leader's ControllerExpandVolume", {
      timeoutMs: 30_000,
    });
    const intent = await claimStatus(cluster, "f");
    assert.equal(intent.allocatedResourceStatuses?.storage, "ControllerResizeInProgress");
    assert.deepEqual(intent.allocatedResources, { storage: "3Mi" });
    await leader.kill();
    const second = await untilNewLeader(cluster.client, LEASE, first);
    assert.notEqual(second, first);
    await until(async () => (await claimStatus(cluster, "f")).capacity?.storage === "3Mi", "capacity 3Mi", {
      timeoutMs: 30_000,
    });
    assert.equal(stub.expands.length, 2, "one call per leader");
    assert.ok(stub.expands.every((r) => r.capacityRange?.requiredBytes === String(3 * MI)));
    assert.equal(stub.sizes.get("vol-f"), 3 * MI, "grown once, to the requested size");
  },
);

test("restart mid-expansion: the intent survives and the next process completes it", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  stub.onExpand = async (_request, context) => {
    if (stub.expands.length === 1) await untilCancelled(context);
  };
  await boundClaim(cluster, { name: "r", driver: STUB, handle: "vol-r" });
  const first = runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "r", "5Mi");
  await until(() => stub.expands.length === 1, "ControllerExpandVolume in flight");
  await first.stop();
  const intent = await claimStatus(cluster, "r");
  assert.equal(intent.allocatedResourceStatuses?.storage, "ControllerResizeInProgress");
  assert.equal(intent.capacity?.storage, "1Mi");
  runResizer(t, cluster, stub.server.path);
  await until(async () => (await claimStatus(cluster, "r")).capacity?.storage === "5Mi", "capacity 5Mi");
  assert.ok(stub.expands.every((r) => r.capacityRange?.requiredBytes === String(5 * MI)));
  assert.equal(stub.sizes.get("vol-r"), 5 * MI);
});

test("metrics and /healthz/leader-election on the HTTP endpoint", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  await boundClaim(cluster, { name: "m", driver: STUB, handle: "vol-m" });
  const resizer = runResizer(t, cluster, stub.server.path, [...FAST_ELECTION, "--http-endpoint=127.0.0.1:0"]);
  await setRequest(cluster, "m", "2Mi");
  await until(
    async () => (await claimStatus(cluster, "m")).allocatedResourceStatuses?.storage === "NodeResizePending",
    "expanded",
  );
  assert.equal((await leaseHolder(cluster.client, LEASE)) !== undefined, true, `Lease ${LEASE} exists`);
  const url = await until(() => resizer.url, "endpoint");
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(
    metrics,
    /csi_sidecar_operations_seconds_count\{driver_name="resize-stub.csi.csikit.io",method_name="\/csi.v1.Controller\/ControllerExpandVolume",grpc_status_code="OK"\} 1/,
  );
  assert.match(metrics, /workqueue_adds_total\{name="resize-stub.csi.csikit.io-pvc"\} \d+/);
  assert.equal((await fetch(`${url}/healthz/leader-election`)).status, 200);
});
