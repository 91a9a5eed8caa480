// `csikit attacher` accepts every flag upstream external-attacher v4.12.0's --help lists (v4.8.1's
// and csi-lib-utils' --automaxprocs and --leader-election-labels), run through the real CLI,
// and its options carry upstream's defaults.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { ATTACHER_FLAGS, attacherOptionsFromFlags } from "../sidecars/attacher/index.ts";

const MAIN = join(import.meta.dirname, "main.ts");

/** Upstream v4.8.1 `--help`, with a value for each (as a Deployment would pass them). */
const UPSTREAM_V481: Record<string, string> = {
  "csi-address": "/csi/csi.sock",
  "default-fstype": "ext4",
  "http-endpoint": ":8080",
  "kube-api-burst": "100",
  "kube-api-qps": "50",
  kubeconfig: "/etc/kubeconfig",
  "leader-election": "true",
  "leader-election-lease-duration": "137s",
  "leader-election-namespace": "kube-system",
  "leader-election-renew-deadline": "107s",
  "leader-election-retry-period": "26s",
  "log-flush-frequency": "10s",
  "log-json-info-buffer-size": "1Mi",
  "log-json-split-stream": "true",
  "log-text-info-buffer-size": "0",
  "log-text-split-stream": "false",
  "logging-format": "json",
  "max-entries": "100",
  "max-grpc-log-length": "200",
  "metrics-path": "/custom-metrics",
  "reconcile-sync": "2m",
  resync: "5m",
  "retry-interval-max": "10m",
  "retry-interval-start": "2s",
  timeout: "30s",
  v: "5",
  vmodule: "controller=4",
  "worker-threads": "20",
};
/** What v4.12.0 adds (feature gates, lease labels in csi-lib-utils' key:value form,
 * --automaxprocs), and klog's flags older manifests pass. */
const MORE: Record<string, string> = {
  automaxprocs: "true",
  "feature-gates": "ReleaseLeaderElectionOnExit=true,MutableCSINodeAllocatableCount=true",
  "leader-election-labels": "app:attacher",
  logtostderr: "true",
};

function argv(values: Record<string, string>): string[] {
  return Object.entries(values).map(([name, value]) => `--${name}=${value}`);
}

function parse(args: readonly string[]): Flags {
  return new Flags(parseFlags({ ...LOGGING_FLAGS, ...ATTACHER_FLAGS }, args));
}

test("every upstream v4.12.0 flag is accepted by the real CLI and listed in --help", () => {
  const result = spawnSync(
    process.execPath,
    [MAIN, "attacher", ...argv(UPSTREAM_V481), ...argv(MORE), "--version"],
    {
      encoding: "utf8",
    },
  );
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^csikit /);
  // The single-dash Go spelling too, as upstream manifests often write it.
  const dashed = spawnSync(
    process.execPath,
    [MAIN, "attacher", "-v=5", "-csi-address", "/csi/csi.sock", "-version"],
    {
      encoding: "utf8",
    },
  );
  assert.equal(dashed.status, 0, dashed.stderr);
  const help = spawnSync(process.execPath, [MAIN, "attacher", "--help"], { encoding: "utf8" });
  for (const name of [
    ...Object.keys(UPSTREAM_V481),
    ...Object.keys(MORE).filter((n) => n !== "logtostderr"),
    "metrics-address",
    "version",
  ])
    assert.ok(help.stdout.includes(`  --${name}`), `--help lists --${name}`);
  assert.match(help.stdout, /external-attacher\s+v4\.12\.0/, "--help names the upstream release");
  assert.match(
    help.stdout,
    /--automaxprocs[^\n]*\n?[^\n]*GOMAXPROCS/,
    "--help says what --automaxprocs means here",
  );
});

test("an unknown flag, gate or bad value is refused, naming it", () => {
  const unknown = spawnSync(process.execPath, [MAIN, "attacher", "--no-such-flag"], { encoding: "utf8" });
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /no-such-flag/);
  const gate = spawnSync(process.execPath, [MAIN, "attacher", "--feature-gates=Bogus=true"], {
    encoding: "utf8",
  });
  assert.equal(gate.status, 2);
  assert.match(gate.stderr, /unrecognized feature gate: Bogus/);
  assert.throws(
    () => attacherOptionsFromFlags(parse(["--worker-threads=0"])),
    /-worker-threads must be at least 1/,
  );
  assert.throws(
    () => attacherOptionsFromFlags(parse(["--max-entries=-1"])),
    /-max-entries must be at least 0/,
  );
});

test("defaults are upstream's; values parse into options", () => {
  const defaults = attacherOptionsFromFlags(parse([]));
  assert.equal(defaults.csiAddress, "/run/csi/socket");
  assert.equal(defaults.kubeconfig, "");
  assert.equal(defaults.timeoutMs, 15_000);
  assert.equal(defaults.workerThreads, 10);
  assert.equal(defaults.retryIntervalStartMs, 1000);
  assert.equal(defaults.retryIntervalMaxMs, 300_000);
  assert.equal(defaults.resyncMs, 600_000);
  assert.equal(defaults.reconcileSyncMs, 60_000);
  assert.equal(defaults.maxEntries, 0);
  assert.equal(defaults.maxGrpcLogLength, -1);
  assert.equal(defaults.defaultFsType, "");
  assert.equal(defaults.kubeApiQps, 5);
  assert.equal(defaults.kubeApiBurst, 10);
  assert.equal(defaults.httpEndpoint, "");
  assert.equal(defaults.metricsPath, "/metrics");
  assert.equal(defaults.releaseLeaderElectionOnExit, false);
  assert.deepEqual(
    { ...defaults.leaderElection },
    {
      enabled: false,
      namespace: "",
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 5_000,
      labels: {},
    },
  );
  const set = attacherOptionsFromFlags(parse([...argv(UPSTREAM_V481), ...argv(MORE)]));
  assert.equal(set.csiAddress, "/csi/csi.sock");
  assert.equal(set.timeoutMs, 30_000);
  assert.equal(set.workerThreads, 20);
  assert.equal(set.resyncMs, 300_000);
  assert.equal(set.reconcileSyncMs, 120_000);
  assert.equal(set.maxEntries, 100);
  assert.equal(set.maxGrpcLogLength, 200);
  assert.equal(set.defaultFsType, "ext4");
  assert.equal(set.httpEndpoint, ":8080");
  assert.equal(set.leaderElection.enabled, true);
  assert.equal(set.leaderElection.namespace, "kube-system");
  assert.equal(set.releaseLeaderElectionOnExit, true);
  assert.deepEqual(set.leaderElection.labels, { app: "attacher" });
});
