// The in-flight mark's cost and crash windows (docs/provisioner-in-flight.md):
// - no write that changes nothing: each provisioned claim costs exactly one mark and one unmark
//   patch, none refused, however the informer's copies lag behind the provisioner's own writes;
// - under a tight client rate limit, a claim's PV is created before the next claim's mark;
// - kill -9 of the real provisioner process in each crash window, then the claim deleted and the
//   provisioner restarted (or not deleted): no volume leaks, none is made twice.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { GVR } from "../../api/index.ts";
import type { AuditEvent } from "../../apiserver/index.ts";
import {
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
import { LEDGER_ANNOTATION } from "./ledger.ts";
import { until } from "../../../test/harness/until.ts";

const MAIN = join(import.meta.dirname, "..", "..", "cli", "main.ts");
/** A spawned provisioner's start-up (Node, TypeScript, informers) on a busy machine. */
const SPAWN = { timeoutMs: 90_000 };

/** The provisioner's writes the server answered, in order. */
function provisionerWrites(cluster: Cluster): AuditEvent[] {
  return (cluster.audit ?? []).filter(
    (e) =>
      e.userAgent?.startsWith("csi-provisioner") === true &&
      ["create", "update", "patch", "delete"].includes(e.verb) &&
      e.objectRef?.resource !== "leases",
  );
}

async function untilAllUnmarked(cluster: Cluster, names: readonly string[]): Promise<void> {
  await until(async () => {
    for (const name of names) {
      const claim = await getClaim(cluster, name);
      if (claim?.metadata?.finalizers?.includes(IN_FLIGHT_FINALIZER)) return false;
    }
    return true;
  }, "every claim unmarked");
}

test("no write that changes nothing: one mark and one unmark per claim, none refused", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  const names = Array.from({ length: 8 }, (_, i) => `c-${i}`);
  const claims = await Promise.all(names.map((name) => createClaim(cluster, name, STUB)));
  const running = runProvisioner(t, cluster, stub.server.path);
  for (const claim of claims) await waitForVolume(cluster, claim);
  await untilAllUnmarked(cluster, names);
  await until(
    async () =>
      (await events(cluster)).filter((e) => e.reason === "ProvisioningSucceeded").length === names.length,
    "every ProvisioningSucceeded event",
  );
  await running.stop();
  const patches = provisionerWrites(cluster).filter(
    (e) => e.objectRef?.resource === "persistentvolumeclaims",
  );
  assert.deepEqual(
    patches.filter((e) => e.responseStatus.code >= 300).map((e) => `${e.verb} ${e.objectRef?.name}`),
    [],
    "no claim patch refused (a refused guarded patch is one built from a stale copy)",
  );
  for (const name of names) {
    const mine = patches.filter((e) => e.objectRef?.name === name).map((e) => e.verb);
    assert.deepEqual(mine, ["patch", "patch"], `claim ${name}: mark + unmark, nothing else`);
  }
  const pvCreates = provisionerWrites(cluster).filter(
    (e) => e.objectRef?.resource === "persistentvolumes" && e.verb === "create",
  );
  assert.equal(pvCreates.length, names.length, "one PV create per claim");
});

test("QPS 1 / burst 1: each claim's PV is created before the next claim's mark", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  const names = ["a", "b", "c", "d"];
  // All claims wait before the provisioner starts: their marks compete for the same tokens.
  const claims = await Promise.all(names.map((name) => createClaim(cluster, name, STUB)));
  runProvisioner(t, cluster, stub.server.path, ["--kube-api-qps=1", "--kube-api-burst=1"]);
  for (const claim of claims) await waitForVolume(cluster, claim, 60_000);
  await untilAllUnmarked(cluster, names);
  // The order the server answered them: a claim's first patch is its mark (unmarks trail).
  const marked = new Set<string>();
  const order: string[] = [];
  for (const write of provisionerWrites(cluster)) {
    const resource = write.objectRef?.resource;
    if (resource === "persistentvolumes" && write.verb === "create") order.push("pv");
    if (resource === "persistentvolumeclaims" && write.verb === "patch") {
      const name = write.objectRef?.name ?? "";
      if (!marked.has(name)) order.push("mark");
      marked.add(name);
    }
  }
  assert.deepEqual(order, ["mark", "pv", "mark", "pv", "mark", "pv", "mark", "pv"]);
});

// ---- crash windows, kill -9 of the real process ------------------------------------------

function startProcess(
  t: TestContext,
  cluster: Cluster,
  socket: string,
  extra: readonly string[] = [],
): ChildProcess {
  const proc = spawn(
    process.execPath,
    [
      MAIN,
      "provisioner",
      `--csi-address=${socket}`,
      `--kubeconfig=${cluster.kubeconfig}`,
      "--timeout=60s",
      "--retry-interval-start=100ms",
      "--retry-interval-max=1s",
      "--kube-api-qps=100",
      ...extra,
    ],
    { stdio: "ignore", env: { ...process.env, POD_NAMESPACE: "default" } },
  );
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  });
  return proc;
}

async function kill9(proc: ChildProcess): Promise<void> {
  assert.equal(proc.exitCode ?? proc.signalCode, null, "the provisioner was still running");
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  proc.kill("SIGKILL");
  await exited;
}

async function deleteAndUntilGone(cluster: Cluster, name: string): Promise<void> {
  await cluster.client.delete(GVR.persistentVolumeClaims, name, { namespace: "default" });
  await until(async () => (await getClaim(cluster, name)) === undefined, "claim gone after restart", {
    timeoutMs: 30_000,
  });
}

test("window 1: killed after the mark, before the driver made anything; claim deleted: nothing leaks", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let lost = true;
  // The first CreateVolume never reaches the backend (as if the process died before sending it).
  stub.onCreate = async (request, context) => {
    if (!lost) return;
    stub.volumes.delete(request.name);
    await untilCancelled(context);
  };
  const first = startProcess(t, cluster, stub.server.path);
  const claim = await createClaim(cluster, "w1", STUB);
  await until(() => stub.creates.length >= 1, "CreateVolume sent", SPAWN);
  assert.ok((await getClaim(cluster, "w1"))?.metadata?.finalizers?.includes(IN_FLIGHT_FINALIZER));
  await kill9(first);
  lost = false;
  startProcess(t, cluster, stub.server.path);
  await deleteAndUntilGone(cluster, "w1");
  assert.equal(stub.volumes.size, 0, "whatever the retried CreateVolume made was deleted");
  assert.equal(await getVolume(cluster, pvNameOf(claim)), undefined);
});

test("window 3: killed after CreateVolume returned, before the PV was saved; claim deleted: nothing leaks", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  // Every PV create fails until the kill: the volume exists only in the backend.
  cluster.faults.failNext({ verb: "create", resource: "persistentvolumes", code: 500, count: 100_000 });
  const first = startProcess(t, cluster, stub.server.path);
  const claim = await createClaim(cluster, "w3", STUB);
  await until(() => cluster.faults.fired >= 1, "PV create attempted after CreateVolume", SPAWN);
  assert.equal(stub.volumes.size, 1);
  await kill9(first);
  cluster.faults.clear();
  startProcess(t, cluster, stub.server.path);
  await deleteAndUntilGone(cluster, "w3");
  assert.equal(stub.volumes.size, 0, "the volume CreateVolume returned before the kill was deleted");
  assert.deepEqual(stub.deletes, [`stub-${pvNameOf(claim)}`]);
  assert.equal(await getVolume(cluster, pvNameOf(claim)), undefined);
});

test("window 3, claim kept: the restart saves the PV for the volume already made, none made twice", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  cluster.faults.failNext({ verb: "create", resource: "persistentvolumes", code: 500, count: 100_000 });
  const first = startProcess(t, cluster, stub.server.path);
  const claim = await createClaim(cluster, "w3k", STUB);
  await until(() => cluster.faults.fired >= 1, "PV create attempted after CreateVolume", SPAWN);
  await kill9(first);
  cluster.faults.clear();
  startProcess(t, cluster, stub.server.path);
  const pv = await waitForVolume(cluster, claim, 30_000);
  assert.equal(pv.spec?.csi?.volumeHandle, `stub-${pvNameOf(claim)}`);
  await untilAllUnmarked(cluster, ["w3k"]);
  assert.equal(stub.volumes.size, 1, "the idempotent retry returned the same volume");
  assert.deepEqual(stub.deletes, []);
});

test("window 4: killed after the PV was saved, before the unmark; restart: unmarked, nothing deleted or made twice", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  stub.onCreate = () => released;
  const first = startProcess(t, cluster, stub.server.path);
  const claim = await createClaim(cluster, "w4", STUB);
  await until(() => stub.creates.length >= 1, "CreateVolume in flight (claim marked)", SPAWN);
  // From now on every claim patch fails: the unmark cannot be written.
  cluster.faults.failNext({ verb: "patch", resource: "persistentvolumeclaims", code: 500, count: 100_000 });
  release();
  await waitForVolume(cluster, claim);
  await until(() => cluster.faults.fired >= 1, "unmark attempted");
  await kill9(first);
  cluster.faults.clear();
  assert.ok((await getClaim(cluster, "w4"))?.metadata?.finalizers?.includes(IN_FLIGHT_FINALIZER));
  const creates = stub.creates.length;
  startProcess(t, cluster, stub.server.path);
  await untilAllUnmarked(cluster, ["w4"]);
  assert.equal(stub.creates.length, creates, "the PV settled it: no CreateVolume after the restart");
  assert.equal(stub.volumes.size, 1);
  assert.deepEqual(stub.deletes, []);
  // The claim deleted later: the PV's reclaim policy owns the volume, the claim is not held.
  await deleteAndUntilGone(cluster, "w4");
});

// ---- --in-flight-record=ledger: the same windows, the intent in one group-committed Lease ----

const LEDGER = ["--in-flight-record=ledger"];
const LEASE = "stub-csi-csikit-io-in-flight";

async function recordedUids(cluster: Cluster): Promise<string[]> {
  try {
    const lease = await cluster.client.get(
      { group: "coordination.k8s.io", version: "v1", resource: "leases" },
      LEASE,
      { namespace: "default" },
    );
    return Object.keys(JSON.parse(lease.metadata?.annotations?.[LEDGER_ANNOTATION] ?? "{}") as object);
  } catch {
    return [];
  }
}

test("ledger: many claims, few ledger writes, no claim write; every intent dropped once its PV exists", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  const names = Array.from({ length: 20 }, (_, i) => `g-${i}`);
  const claims = await Promise.all(names.map((name) => createClaim(cluster, name, STUB)));
  const running = runProvisioner(
    t,
    cluster,
    stub.server.path,
    [...LEDGER, "--kube-api-qps=5", "--kube-api-burst=10"],
    {
      env: { POD_NAMESPACE: "default" },
    },
  );
  for (const claim of claims) await waitForVolume(cluster, claim, 60_000);
  await until(async () => (await recordedUids(cluster)).length === 0, "ledger emptied", {
    timeoutMs: 60_000,
  });
  await running.stop();
  const writes = provisionerWrites(cluster);
  assert.deepEqual(
    writes.filter((e) => e.objectRef?.resource === "persistentvolumeclaims"),
    [],
    "no claim write at all",
  );
  const ledgerWrites = (cluster.audit ?? []).filter(
    (e) => e.userAgent?.startsWith("csi-provisioner") && e.verb === "update" && e.objectRef?.name === LEASE,
  );
  assert.ok(
    ledgerWrites.length < names.length,
    `group commit: ${ledgerWrites.length} ledger writes for ${names.length} claims`,
  );
});

test("ledger, kill -9 mid-CreateVolume, claim deleted, restart: nothing leaks (external-provisioner#486)", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let hang = true;
  stub.onCreate = async (_request, context) => {
    if (hang) await untilCancelled(context);
  };
  const first = startProcess(t, cluster, stub.server.path, LEDGER);
  const claim = await createClaim(cluster, "l2", STUB);
  await until(() => stub.creates.length >= 1, "CreateVolume in flight", SPAWN);
  assert.deepEqual(await recordedUids(cluster), [claim.metadata?.uid], "intent recorded before CreateVolume");
  await kill9(first);
  // No finalizer on the claim in this mode: it is gone at once; the ledger remembers it.
  await cluster.client.delete(GVR.persistentVolumeClaims, "l2", { namespace: "default" });
  assert.equal(await getClaim(cluster, "l2"), undefined);
  hang = false;
  startProcess(t, cluster, stub.server.path, LEDGER);
  await until(() => stub.volumes.size === 0, "the volume created before the kill was deleted", {
    timeoutMs: 30_000,
  });
  await until(async () => (await recordedUids(cluster)).length === 0, "intent dropped");
  assert.deepEqual(stub.deletes, [`stub-${pvNameOf(claim)}`]);
  assert.equal(await getVolume(cluster, pvNameOf(claim)), undefined);
});

test("ledger, window 3: killed before the PV was saved, claim deleted, restart: nothing leaks", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  cluster.faults.failNext({ verb: "create", resource: "persistentvolumes", code: 500, count: 100_000 });
  const first = startProcess(t, cluster, stub.server.path, LEDGER);
  const claim = await createClaim(cluster, "l3", STUB);
  await until(() => cluster.faults.fired >= 1, "PV create attempted after CreateVolume", SPAWN);
  await kill9(first);
  cluster.faults.clear();
  await cluster.client.delete(GVR.persistentVolumeClaims, "l3", { namespace: "default" });
  startProcess(t, cluster, stub.server.path, LEDGER);
  await until(() => stub.volumes.size === 0, "the volume was deleted", { timeoutMs: 30_000 });
  await until(async () => (await recordedUids(cluster)).length === 0, "intent dropped");
  assert.equal(await getVolume(cluster, pvNameOf(claim)), undefined);
});

test("ledger, window 4: killed after the PV was saved, before the intent was dropped; restart drops it, nothing redone", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  stub.onCreate = () => released;
  const first = startProcess(t, cluster, stub.server.path, LEDGER);
  const claim = await createClaim(cluster, "l4", STUB);
  await until(() => stub.creates.length >= 1, "CreateVolume in flight (intent recorded)", SPAWN);
  cluster.faults.failNext({ verb: "update", resource: "leases", code: 500, count: 100_000 });
  release();
  await waitForVolume(cluster, claim);
  await until(() => cluster.faults.fired >= 1, "intent removal attempted");
  await kill9(first);
  cluster.faults.clear();
  assert.deepEqual(await recordedUids(cluster), [claim.metadata?.uid]);
  const creates = stub.creates.length;
  startProcess(t, cluster, stub.server.path, LEDGER);
  await until(async () => (await recordedUids(cluster)).length === 0, "intent dropped after the restart", {
    timeoutMs: 30_000,
  });
  assert.equal(stub.creates.length, creates, "the PV settled it: no CreateVolume after the restart");
  assert.equal(stub.volumes.size, 1);
  assert.deepEqual(stub.deletes, []);
});
