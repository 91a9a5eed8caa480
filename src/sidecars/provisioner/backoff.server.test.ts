// Retries never faster than their backoff (issue 24 §1, seed 003 "CSI error and timeout
// handling"): a claim whose CreateVolume fails for good is retried per claim from
// --retry-interval-start (1s) doubling to --retry-interval-max (5m), however many watch events
// the provisioner's own writes (the in-flight mark, added and removed on every try) cause; the
// ProvisioningFailed event is one Event object whose count grows; a driver that recovers gets
// the claim provisioned at the next retry. Deletion backs off the same way. Real time (the
// real API server, a scripted driver over gRPC on a Unix socket), with the default intervals.

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import type { CoreEvent } from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  STUB,
  bind,
  createClaim,
  createClass,
  events,
  getVolume,
  release,
  runProvisioner,
  startCluster,
  startStub,
  waitForVolume,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";

/** The upstream defaults, over the test harness's faster ones. */
const DEFAULT_INTERVALS = ["--retry-interval-start=1s", "--retry-interval-max=5m"];

/** Calls a permanently failing object may get in `windowMs` under 1s-doubling backoff. */
function allowedCalls(windowMs: number): number {
  return Math.floor(Math.log2(windowMs / 1000)) + 2;
}

/** The Events with `reason` about the object named `name`. */
async function eventsAbout(
  cluster: Parameters<typeof events>[0],
  name: string,
  reason: string,
): Promise<CoreEvent[]> {
  return (await events(cluster)).filter((e) => e.involvedObject.name === name && e.reason === reason);
}

test("a claim whose CreateVolume fails for good is retried with 1s-doubling backoff, one deduplicated event, and provisions at the next retry once the driver recovers", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  const calls: number[] = [];
  stub.onCreate = () => {
    calls.push(Date.now());
    return Promise.reject(new CsiError(GrpcStatus.OUT_OF_RANGE, "requested 2Ti exceeds the 1Ti maximum"));
  };
  await createClass(cluster, "sc", STUB);
  runProvisioner(t, cluster, stub.server.path, DEFAULT_INTERVALS);
  const claim = await createClaim(cluster, "too-big", STUB, { resources: { requests: { storage: "2Ti" } } });
  await until(() => calls.length > 0, "the first CreateVolume");
  const windowMs = 10_000;
  await delay(windowMs);
  const inWindow = calls.filter((at) => at - calls[0]! <= windowMs).length;
  assert.ok(
    inWindow <= allowedCalls(windowMs),
    `${inWindow} CreateVolume calls in ${windowMs} ms; backoff allows ${allowedCalls(windowMs)}`,
  );
  assert.ok(inWindow >= 3, `still retried: ${inWindow} calls`);
  // One Warning event, its count raised per try (client-go's correlator), not one per try.
  const failed = await until(async () => {
    const found = await eventsAbout(cluster, "too-big", "ProvisioningFailed");
    return found.length === 1 && (found[0]?.count ?? 0) > 1 && found;
  }, "one ProvisioningFailed event with count > 1");
  assert.equal(failed[0]!.type, "Warning");
  assert.match(failed[0]?.message ?? "", /OutOfRange|OUT_OF_RANGE|exceeds/);

  // The driver recovers: the claim provisions at the next retry, within the current interval.
  const failures = calls.length;
  const intervalMs = Math.min(1000 * 2 ** (failures - 1), 300_000);
  stub.onCreate = undefined;
  const pv = await waitForVolume(cluster, claim, intervalMs + 5000);
  assert.equal(pv.spec?.capacity?.storage, "2Ti");
  assert.equal(calls.length, failures, "the recovered call is not counted as a failure");
});

test("a released volume whose DeleteVolume fails for good is retried with backoff, one deduplicated VolumeFailedDelete event", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB, { reclaimPolicy: "Delete" });
  runProvisioner(t, cluster, stub.server.path, DEFAULT_INTERVALS);
  const claim = await createClaim(cluster, "stuck", STUB);
  const pv = await waitForVolume(cluster, claim);
  await bind(cluster, claim, pv);
  const calls: number[] = [];
  stub.onDelete = () => {
    calls.push(Date.now());
    return Promise.reject(new CsiError(GrpcStatus.FAILED_PRECONDITION, "volume has snapshots"));
  };
  await release(cluster, claim, pv.metadata.name!);
  await until(() => calls.length > 0, "the first DeleteVolume");
  const windowMs = 4000;
  await delay(windowMs);
  const inWindow = calls.filter((at) => at - calls[0]! <= windowMs).length;
  assert.ok(
    inWindow <= allowedCalls(windowMs),
    `${inWindow} DeleteVolume calls in ${windowMs} ms; backoff allows ${allowedCalls(windowMs)}`,
  );
  assert.ok(inWindow >= 2, `still retried: ${inWindow} calls`);
  await until(async () => {
    const found = await eventsAbout(cluster, pv.metadata.name!, "VolumeFailedDelete");
    return found.length === 1 && (found[0]?.count ?? 0) > 1;
  }, "one VolumeFailedDelete event with count > 1");
  assert.notEqual(
    await getVolume(cluster, pv.metadata.name!),
    undefined,
    "the PV stays while the volume does",
  );
});
