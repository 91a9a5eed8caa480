// Leak safety with a scripted driver: CreateVolume timing out while the claim is deleted, the
// provisioner killed with SIGKILL mid-CreateVolume and restarted after the claim was deleted
// (external-provisioner#486, which upstream still has), final errors, rescheduling, and a PV
// create failing after CreateVolume succeeded. "No leak" = the driver holds no volume for a
// claim that is gone, and no PV is left for it.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { GVR } from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  STUB,
  createClaim,
  createClass,
  events,
  getClaim,
  getVolume,
  pvNameOf,
  runProvisioner,
  startCluster,
  startStub,
  untilCancelled,
  waitForVolume,
  type Cluster,
} from "../../../test/harness/provisioner.ts";
import { IN_FLIGHT_FINALIZER } from "./index.ts";
import { until } from "../../../test/harness/until.ts";

const MAIN = join(import.meta.dirname, "..", "..", "cli", "main.ts");

test("CreateVolume past --timeout, claim deleted meanwhile: the late volume is deleted, nothing leaks", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let calls = 0;
  // The first two calls outlive the 300ms timeout (the backend creates the volume anyway).
  stub.onCreate = async (_request, context) => {
    if (++calls <= 2) await untilCancelled(context);
  };
  runProvisioner(t, cluster, stub.server.path, ["--timeout=300ms"]);
  const claim = await createClaim(cluster, "slow", STUB);
  await until(() => calls >= 1, "first CreateVolume");
  const marked = await getClaim(cluster, "slow");
  assert.ok(marked?.metadata?.finalizers?.includes(IN_FLIGHT_FINALIZER), "marked before CreateVolume");
  assert.equal(stub.volumes.size, 1, "the backend has the volume although the call timed out");
  await cluster.client.delete(GVR.persistentVolumeClaims, "slow", { namespace: "default" });
  await until(async () => (await getClaim(cluster, "slow")) === undefined, "claim gone");
  assert.equal(stub.volumes.size, 0, "the late volume was deleted");
  assert.equal(await getVolume(cluster, pvNameOf(claim)), undefined);
  assert.ok(calls >= 3, "CreateVolume was retried until it answered");
  const failed = (await events(cluster)).filter((e) => e.reason === "ProvisioningFailed");
  assert.ok(
    failed.some((e) => e.message?.includes("DeadlineExceeded")),
    "timeouts reported as ProvisioningFailed",
  );
});

test("kill -9 mid-CreateVolume, claim deleted, restart: nothing leaks (external-provisioner#486)", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let hang = true;
  stub.onCreate = async (_request, context) => {
    if (hang) await untilCancelled(context);
  };
  const args = [
    MAIN,
    "provisioner",
    `--csi-address=${stub.server.path}`,
    `--kubeconfig=${cluster.kubeconfig}`,
    "--timeout=60s",
    "--retry-interval-start=100ms",
    "--kube-api-qps=100",
  ];
  const start = () => spawn(process.execPath, args, { stdio: "ignore" });
  const first = start();
  t.after(() => first.kill("SIGKILL"));
  const claim = await createClaim(cluster, "victim", STUB);
  await until(() => stub.creates.length >= 1, "CreateVolume in flight");
  assert.equal(stub.volumes.size, 1);
  first.kill("SIGKILL");
  await new Promise((resolve) => first.once("exit", resolve));
  await cluster.client.delete(GVR.persistentVolumeClaims, "victim", { namespace: "default" });
  const pending = await getClaim(cluster, "victim");
  assert.ok(pending?.metadata?.deletionTimestamp, "the in-flight mark keeps the deleted claim visible");
  hang = false;
  const second = start();
  t.after(() => second.kill("SIGKILL"));
  await until(async () => (await getClaim(cluster, "victim")) === undefined, "claim gone after restart", {
    timeoutMs: 30_000,
  });
  assert.equal(stub.volumes.size, 0, "the volume created before the kill was deleted");
  assert.deepEqual(stub.deletes, [`stub-${pvNameOf(claim)}`]);
  assert.equal(await getVolume(cluster, pvNameOf(claim)), undefined);
  second.kill("SIGTERM");
  await new Promise((resolve) => second.once("exit", resolve));
});

test("final error: ProvisioningFailed with the driver's message, mark removed, retried until it works", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let fail = true;
  stub.onCreate = async (request) => {
    if (fail) {
      stub.volumes.delete(request.name);
      throw new CsiError(GrpcStatus.INVALID_ARGUMENT, "pool is read-only");
    }
  };
  runProvisioner(t, cluster, stub.server.path);
  const claim = await createClaim(cluster, "c", STUB);
  const event = await until(
    async () => (await events(cluster)).find((e) => e.reason === "ProvisioningFailed"),
    "ProvisioningFailed",
  );
  assert.equal(
    event.message,
    'failed to provision volume with StorageClass "sc": rpc error: code = InvalidArgument desc = pool is read-only',
  );
  await until(async () => {
    const current = await getClaim(cluster, "c");
    return !current?.metadata?.finalizers?.includes(IN_FLIGHT_FINALIZER);
  }, "mark removed after the final error");
  fail = false;
  await waitForVolume(cluster, claim);
});

const SELECTED_NODE = "volume.kubernetes.io/selected-node";

/** A registered node of the topology-aware stub: its CSINode (key "zone") and Node (that zone). */
async function createZonedNode(cluster: Cluster, name: string, zone: string): Promise<void> {
  await cluster.client.create(GVR.csiNodes, {
    metadata: { name },
    spec: { drivers: [{ name: STUB, nodeID: name, topologyKeys: ["zone"] }] },
  });
  await cluster.client.create(GVR.nodes, { metadata: { name, labels: { zone } } });
}

async function untilSelectedNodeRemoved(cluster: Cluster, claimName: string): Promise<void> {
  await until(
    async () => (await getClaim(cluster, claimName))?.metadata?.annotations?.[SELECTED_NODE] === undefined,
    "selected-node removed",
  );
}

test("WaitForFirstConsumer + RESOURCE_EXHAUSTED: selected-node removed so the scheduler picks again", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir, { topology: true });
  await createClass(cluster, "sc", STUB, { volumeBindingMode: "WaitForFirstConsumer" });
  await createZonedNode(cluster, "n1", "a");
  stub.onCreate = async (request) => {
    stub.volumes.delete(request.name);
    throw new CsiError(GrpcStatus.RESOURCE_EXHAUSTED, "full");
  };
  runProvisioner(t, cluster, stub.server.path);
  await createClaim(cluster, "w", STUB, {}, { [SELECTED_NODE]: "n1" });
  await untilSelectedNodeRemoved(cluster, "w");
  assert.deepEqual(stub.creates[0]?.accessibilityRequirements?.requisite, [{ segments: { zone: "a" } }]);
});

test("WaitForFirstConsumer, selected node deleted before CreateVolume: selected-node removed, no endless retry (#1437)", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir, { topology: true });
  await createClass(cluster, "sc", STUB, { volumeBindingMode: "WaitForFirstConsumer" });
  // Node n1 and its CSINode were deleted after the scheduler chose it; only n2 is left.
  await createZonedNode(cluster, "n2", "b");
  runProvisioner(t, cluster, stub.server.path);
  await createClaim(cluster, "w", STUB, {}, { [SELECTED_NODE]: "n1" });
  await untilSelectedNodeRemoved(cluster, "w");
  assert.equal(stub.creates.length, 0, "no CreateVolume without the node's topology");
  const failed = (await events(cluster)).filter((e) => e.reason === "ProvisioningFailed");
  assert.match(failed[0]?.message ?? "", /selected node "n1" not found/);
  // The scheduler picks n2: provisioned there.
  const claim = (await getClaim(cluster, "w"))!;
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    "w",
    { metadata: { annotations: { [SELECTED_NODE]: "n2" } } },
    { namespace: "default" },
  );
  await waitForVolume(cluster, claim);
  assert.deepEqual(stub.creates.at(-1)?.accessibilityRequirements?.requisite, [{ segments: { zone: "b" } }]);
});

test("PV create fails after CreateVolume succeeded: retried, the volume is never lost", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  cluster.faults.failNext({ verb: "create", resource: "persistentvolumes", code: 500, count: 3 });
  runProvisioner(t, cluster, stub.server.path);
  const claim = await createClaim(cluster, "c", STUB);
  const pv = await waitForVolume(cluster, claim);
  assert.equal(cluster.faults.fired, 3);
  assert.equal(pv.spec?.csi?.volumeHandle, `stub-${pvNameOf(claim)}`);
  assert.equal(stub.volumes.size, 1);
});
