import { test } from "node:test";
import assert from "node:assert/strict";
import { Flags, parseFlags } from "../base/index.ts";
import { KubeClient, loadKubeConfig } from "./client.ts";
import { COMMON_SIDECAR_FLAGS, commonSidecarOptions } from "./flags.ts";
import { leaseName } from "./lease-name.ts";
import { LeaderElector, defaultIdentity, leaderElectionOptions, microTime } from "./leaderelection.ts";

const client = new KubeClient({
  kubeConfig: loadKubeConfig({ master: "https://127.0.0.1:1", env: {}, homeDir: "/nonexistent" }),
});

test("MicroTime has microseconds, as the Lease API writes it", () => {
  assert.equal(microTime(Date.UTC(2026, 10, 22, 17, 0, 1, 234)), "2026-11-22T17:00:01.234000Z");
});

test("identity is hostname_random, different per elector", () => {
  const a = defaultIdentity();
  assert.match(a, /^.+_[0-9a-f-]{36}$/);
  assert.notEqual(a, defaultIdentity());
});

test("timing constraints of client-go are enforced", () => {
  const base = { client, name: "l", namespace: "ns" };
  assert.throws(
    () => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }),
    /lease duration/,
  );
  assert.throws(() => new LeaderElector({ ...base, renewDeadlineMs: 6000, retryPeriodMs: 5000 }), /1\.2/);
  const elector = new LeaderElector(base);
  assert.deepEqual(
    [elector.leaseDurationMs, elector.renewDeadlineMs, elector.retryPeriodMs],
    [15_000, 10_000, 5_000],
  );
  assert.equal(elector.isLeader(), false);
  assert.doesNotThrow(elector.healthCheck());
});

test("options from the common flags; an empty namespace means the pod's own", () => {
  const flags = (argv: string[]) => commonSidecarOptions(new Flags(parseFlags(COMMON_SIDECAR_FLAGS, argv)));
  const explicit = leaderElectionOptions(
    flags(["--leader-election", "--leader-election-namespace=storage", "--leader-election-labels=a=b"])
      .leaderElection,
    { client, leaseName: leaseName("attacher", "hostpath.csi.k8s.io") },
  );
  assert.equal(explicit.enabled, true);
  assert.equal(explicit.namespace, "storage");
  assert.equal(explicit.name, "external-attacher-leader-hostpath-csi-k8s-io");
  assert.deepEqual(explicit.labels, { a: "b" });
  assert.equal(explicit.leaseDurationMs, 15_000);
  const saved = process.env.POD_NAMESPACE;
  process.env.POD_NAMESPACE = "from-downward-api";
  try {
    const implicit = leaderElectionOptions(flags([]).leaderElection, { client, leaseName: "x" });
    assert.equal(implicit.namespace, "from-downward-api");
    assert.equal(implicit.enabled, false);
  } finally {
    if (saved === undefined) delete process.env.POD_NAMESPACE;
    else process.env.POD_NAMESPACE = saved;
  }
});
