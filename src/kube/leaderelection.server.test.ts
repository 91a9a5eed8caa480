// Leader election against the real embedded API server, time driven by a FakeClock: two
// candidates compete, a dead leader is replaced after the lease duration, a clean shutdown
// releases at once, a leader that cannot renew stops leading, conflicts are retried, and the
// health check reports an overdue renewal.
import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../base/index.ts";
import {
  LEASES,
  LeaderElector,
  LeadershipLostError,
  runElected,
  runWithLeaderElection,
  type Lease,
} from "./leaderelection.ts";
import { sharedTestServer } from "../../test/harness/kube-server.ts";
import { until } from "../../test/harness/until.ts";

const shared = sharedTestServer();

const readLease = (name: string): Promise<Lease> =>
  shared.client.get<Lease>(LEASES, name, { namespace: "default" });

interface Candidate {
  elector: LeaderElector;
  controller: AbortController;
  /** The elector's run promise. */
  done: Promise<"stopped" | "lost">;
  /** The signal handed to the work while leading. */
  workSignal: () => AbortSignal | undefined;
  stoppedLeading: () => number;
}

function candidate(
  name: string,
  identity: string,
  clock: FakeClock,
  extra: { releaseOnCancel?: boolean; renewDeadlineMs?: number; healthTimeoutMs?: number } = {},
): Candidate {
  const elector = new LeaderElector({
    client: shared.client,
    name,
    namespace: "default",
    identity,
    clock,
    random: () => 0,
    labels: { app: "csikit-test" },
    ...extra,
  });
  const controller = new AbortController();
  let workSignal: AbortSignal | undefined;
  let stopped = 0;
  const done = elector.run(
    async (signal) => {
      workSignal = signal;
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    },
    controller.signal,
    { onStoppedLeading: () => stopped++ },
  );
  return { elector, controller, done, workSignal: () => workSignal, stoppedLeading: () => stopped };
}

/** Advances the fake clock by `ms` and waits until every elector finished the attempts that fired. */
async function tick(
  clock: FakeClock,
  ms: number,
  electors: LeaderElector[],
  attemptsEach: number,
): Promise<void> {
  const before = electors.map((e) => e.stats.attempts);
  await clock.advance(ms);
  await until(
    () => electors.every((e, i) => e.stats.attempts >= before[i]! + attemptsEach),
    `${attemptsEach} attempt(s) per elector after ${ms}ms`,
  );
}

test("two candidates: the first acquires (lease created with labels), the second waits", async (t) => {
  const clock = new FakeClock();
  const a = candidate("compete", "a", clock);
  await until(() => a.elector.isLeader(), "a to lead");
  const b = candidate("compete", "b", clock);
  t.after(async () => {
    a.controller.abort();
    b.controller.abort();
    await Promise.all([a.done, b.done]);
  });
  await until(() => b.elector.stats.attempts === 1, "b's first attempt");
  assert.equal(b.elector.isLeader(), false);
  assert.equal(b.elector.observedLeader, "a");
  const lease = await readLease("compete");
  assert.equal(lease.spec?.holderIdentity, "a");
  assert.equal(lease.spec?.leaseDurationSeconds, 15);
  assert.deepEqual(lease.metadata?.labels, { app: "csikit-test" });
  assert.match(lease.spec?.renewTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  // a renews every retry period; b keeps waiting.
  await tick(clock, 5000, [a.elector, b.elector], 1);
  await tick(clock, 5000, [a.elector, b.elector], 1);
  assert.equal(a.elector.isLeader(), true);
  assert.equal(b.elector.isLeader(), false);
  assert.ok(a.workSignal() && !a.workSignal()!.aborted);
});

test("a leader that dies without releasing is replaced only after the lease duration", async (t) => {
  const clock = new FakeClock();
  const a = candidate("killed", "a", clock, { releaseOnCancel: false });
  await until(() => a.elector.isLeader(), "a to lead");
  const b = candidate("killed", "b", clock);
  t.after(async () => {
    b.controller.abort();
    await b.done;
  });
  await until(() => b.elector.stats.attempts === 1, "b's first attempt");
  a.controller.abort(); // a "dies": no release
  assert.equal(await a.done, "stopped");
  assert.equal((await readLease("killed")).spec?.holderIdentity, "a");
  await tick(clock, 5000, [b.elector], 1);
  await tick(clock, 5000, [b.elector], 1);
  assert.equal(b.elector.isLeader(), false, "10s after b saw a's last renewal: still a's");
  await tick(clock, 5000, [b.elector], 1);
  await until(() => b.elector.isLeader(), "b to take over at 15s");
  const lease = await readLease("killed");
  assert.equal(lease.spec?.holderIdentity, "b");
  assert.equal(lease.spec?.leaseTransitions, 1);
});

test("release on cancel: the lease is cleared, so the standby takes over at its next try", async (t) => {
  const clock = new FakeClock();
  const a = candidate("release", "a", clock);
  await until(() => a.elector.isLeader(), "a to lead");
  const b = candidate("release", "b", clock);
  t.after(async () => {
    b.controller.abort();
    await b.done;
  });
  await until(() => b.elector.stats.attempts === 1, "b's first attempt");
  a.controller.abort();
  assert.equal(await a.done, "stopped");
  assert.ok(a.workSignal()?.aborted, "the work was stopped before the release");
  assert.equal(a.stoppedLeading(), 1);
  const released = await readLease("release");
  assert.equal(released.spec?.holderIdentity, "");
  assert.equal(released.spec?.leaseDurationSeconds, 1);
  await tick(clock, 5000, [b.elector], 1);
  assert.equal(b.elector.isLeader(), true, "no full lease duration wait after a release");
});

test("a leader that cannot renew within the renew deadline stops leading", async (t) => {
  const clock = new FakeClock();
  const a = candidate("renew-fails", "a", clock);
  t.after(() => shared.server.faults.clear());
  await until(() => a.elector.isLeader(), "a to lead");
  shared.server.faults.failNext({ verb: "update", resource: "leases", code: 500, count: 1000 });
  // Renew attempts at 5s and 10s fail; the deadline (10s after the attempt began) ends it at 15s.
  await tick(clock, 5000, [a.elector], 1);
  await tick(clock, 5000, [a.elector], 1);
  assert.equal(a.elector.isLeader(), true);
  assert.equal(a.workSignal()!.aborted, false);
  await clock.advance(5000);
  assert.equal(await a.done, "lost");
  assert.equal(a.elector.isLeader(), false);
  assert.equal(a.workSignal()!.aborted, true);
  assert.equal(a.stoppedLeading(), 1);
  shared.server.faults.clear();
  assert.equal((await readLease("renew-fails")).spec?.holderIdentity, "a", "a lost leader does not release");
});

test("runWithLeaderElection: lost leadership rejects after the work returned; disabled runs directly", async () => {
  const clock = new FakeClock();
  const elector = new LeaderElector({
    client: shared.client,
    name: "run-lost",
    namespace: "default",
    identity: "a",
    clock,
    random: () => 0,
  });
  let workEnded = false;
  const outcome = runElected(
    elector,
    async (signal) => {
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      workEnded = true;
    },
    new AbortController().signal,
  ).then(
    () => undefined,
    (error: unknown) => error,
  );
  await until(() => elector.isLeader(), "leading");
  shared.server.faults.failNext({ verb: "update", resource: "leases", code: 500, count: 1000 });
  try {
    await tick(clock, 5000, [elector], 1);
    await tick(clock, 5000, [elector], 1);
    await clock.advance(5000);
    const error = await outcome;
    assert.ok(error instanceof LeadershipLostError, String(error));
    assert.match(error.message, /default\/run-lost/);
    assert.equal(workEnded, true);
  } finally {
    shared.server.faults.clear();
  }
  let ran = false;
  await runWithLeaderElection(
    { enabled: false, client: shared.client, name: "unused", namespace: "default" },
    () => {
      ran = true;
      return Promise.resolve();
    },
    new AbortController().signal,
  );
  assert.equal(ran, true);
});

test("a conflicting write fails the attempt, which is retried on the next period", async (t) => {
  const clock = new FakeClock();
  await shared.client.create<Lease>(LEASES, {
    metadata: { name: "conflict", namespace: "default" },
    spec: { holderIdentity: "", leaseDurationSeconds: 1 },
  });
  shared.server.faults.failNext({ verb: "update", resource: "leases", code: 409 });
  const a = candidate("conflict", "a", clock);
  t.after(async () => {
    a.controller.abort();
    await a.done;
  });
  await until(() => a.elector.stats.attempts === 1, "the conflicting attempt");
  assert.equal(a.elector.isLeader(), false);
  await tick(clock, 5000, [a.elector], 1);
  assert.equal(a.elector.isLeader(), true);
});

test("health check fails while leading with the renewal overdue", async (t) => {
  const clock = new FakeClock();
  // renewDeadline close to leaseDuration and no tolerance, so the window between "overdue"
  // (15s after the last renewal) and "given up" (5s + 14s = 19s) is observable.
  const a = candidate("health", "a", clock, { renewDeadlineMs: 14_000, healthTimeoutMs: 0 });
  t.after(async () => {
    shared.server.faults.clear();
    a.controller.abort();
    await a.done;
  });
  const check = a.elector.healthCheck();
  check(); // not leading yet: healthy
  await until(() => a.elector.isLeader(), "a to lead");
  shared.server.faults.failNext({ verb: "update", resource: "leases", code: 500, count: 1000 });
  await tick(clock, 5000, [a.elector], 1);
  await tick(clock, 5000, [a.elector], 1);
  await tick(clock, 5000, [a.elector], 1);
  check(); // exactly the lease duration: not overdue yet
  await clock.advance(1);
  assert.equal(a.elector.isLeader(), true);
  assert.throws(check, /failed election to renew leadership on lease health/);
  await clock.advance(4000);
  assert.equal(await a.done, "lost");
  check(); // no longer leading: healthy again, as shared.client-go's adaptor
});

test("work that fails while leading: the lease is released and the error comes back", async () => {
  const clock = new FakeClock();
  const elector = new LeaderElector({
    client: shared.client,
    name: "work-fails",
    namespace: "default",
    identity: "a",
    clock,
  });
  let stopped = 0;
  await assert.rejects(
    elector.run(() => Promise.reject(new Error("controller crashed")), new AbortController().signal, {
      onStoppedLeading: () => stopped++,
    }),
    /controller crashed/,
  );
  assert.equal(stopped, 1);
  assert.equal(elector.isLeader(), false);
  assert.equal((await readLease("work-fails")).spec?.holderIdentity, "");
});
