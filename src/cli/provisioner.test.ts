// `csikit provisioner` accepts every flag upstream external-provisioner v5.2.0's --help lists
// (the list, logging flags included) plus the ones v6.3.0 added, run through the real
// CLI; and
// its options carry upstream's defaults.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { PROVISIONER_FLAGS, provisionerOptionsFromFlags } from "../sidecars/provisioner/index.ts";

const MAIN = join(import.meta.dirname, "main.ts");

/** Upstream v5.2.0 `--help`, with a value for each (as a Deployment would pass them). */
const UPSTREAM_V520: Record<string, string | undefined> = {
  "capacity-for-immediate-binding": "true",
  "capacity-ownerref-level": "2",
  "capacity-poll-interval": "2m",
  "capacity-threads": "2",
  "cloning-protection-threads": "2",
  "controller-publish-readonly": "true",
  "csi-address": "/csi/csi.sock",
  "default-fstype": "ext4",
  "enable-capacity": "true",
  "enable-pprof": "true",
  "extra-create-metadata": "true",
  "feature-gates": "Topology=true,HonorPVReclaimPolicy=false",
  "http-endpoint": ":8080",
  "immediate-topology": "false",
  "kube-api-burst": "100",
  "kube-api-capacity-burst": "10",
  "kube-api-capacity-qps": "2",
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
  master: "https://10.0.0.1:6443",
  "metrics-path": "/custom-metrics",
  "node-deployment": "false",
  "node-deployment-base-delay": "10s",
  "node-deployment-immediate-binding": "false",
  "node-deployment-max-delay": "30s",
  "prevent-volume-mode-conversion": "false",
  "retry-interval-max": "10m",
  "retry-interval-start": "2s",
  "strict-topology": "true",
  timeout: "30s",
  v: "5",
  vmodule: "controller=4",
  "volume-name-prefix": "vol",
  "volume-name-uuid-length": "16",
  "worker-threads": "50",
};
/** What v6.3.0's --help adds to v5.2.0's (a bare --automaxprocs, as Go bool flags allow). */
const NEWER: Record<string, string | undefined> = {
  automaxprocs: undefined,
  "snapshot-orphan-sweep-interval": "1m",
  // csi-lib-utils' format: key:value pairs.
  "leader-election-labels": "app:provisioner,tier:storage",
};

function argv(values: Record<string, string | undefined>): string[] {
  return Object.entries(values).map(([name, value]) =>
    value === undefined ? `--${name}` : `--${name}=${value}`,
  );
}

test("every upstream v5.2.0 flag and every v6.3.0 addition is accepted by the real CLI", () => {
  const result = spawnSync(
    process.execPath,
    [MAIN, "provisioner", ...argv(UPSTREAM_V520), ...argv(NEWER), "--version"],
    { encoding: "utf8" },
  );
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^csikit /);
  const help = spawnSync(process.execPath, [MAIN, "provisioner", "--help"], { encoding: "utf8" });
  for (const name of [...Object.keys(UPSTREAM_V520), ...Object.keys(NEWER)])
    assert.ok(help.stdout.includes(`  --${name}`), `--help lists --${name}`);
  assert.match(help.stdout, /external-provisioner\s+v6\.3\.0/, "--help names the upstream release");
});

test("an unknown flag or gate is refused, naming it", () => {
  const result = spawnSync(process.execPath, [MAIN, "provisioner", "--no-such-flag"], { encoding: "utf8" });
  assert.equal(result.status, 2);
  assert.match(result.stderr, /no-such-flag/);
  const gate = spawnSync(
    process.execPath,
    [MAIN, "provisioner", "--feature-gates=Bogus=true", "--kubeconfig=/nonexistent"],
    {
      encoding: "utf8",
    },
  );
  assert.equal(gate.status, 2);
  assert.match(gate.stderr, /unrecognized feature gate: Bogus/);
});

test("defaults are upstream's; values parse into options", () => {
  const defaults = provisionerOptionsFromFlags(
    new Flags(parseFlags({ ...LOGGING_FLAGS, ...PROVISIONER_FLAGS }, [])),
    {},
  );
  assert.equal(defaults.csiAddress, "/run/csi/socket");
  assert.equal(defaults.timeoutMs, 15_000, "seed 003: --timeout is 15 seconds by default");
  assert.equal(defaults.retryIntervalStartMs, 1000);
  assert.equal(defaults.retryIntervalMaxMs, 300_000);
  assert.equal(defaults.workerThreads, 100);
  assert.equal(defaults.kubeApiQps, 5);
  assert.equal(defaults.kubeApiBurst, 10);
  assert.equal(defaults.volumeNamePrefix, "pvc");
  assert.equal(defaults.volumeNameUuidLength, -1);
  assert.equal(defaults.immediateTopology, true);
  assert.equal(defaults.strictTopology, false);
  assert.equal(defaults.preventVolumeModeConversion, true);
  assert.equal(defaults.cloningProtectionThreads, 1);
  assert.deepEqual(defaults.nodeDeployment, {
    enabled: false,
    nodeName: "",
    immediateBinding: true,
    baseDelayMs: 20_000,
    maxDelayMs: 60_000,
  });
  assert.deepEqual(
    { ...defaults.capacity },
    {
      enabled: false,
      ownerrefLevel: 1,
      threads: 1,
      pollIntervalMs: 60_000,
      forImmediateBinding: false,
      kubeApiQps: 1,
      kubeApiBurst: 5,
      namespace: "",
      podName: "",
    },
  );
  assert.deepEqual(defaults.features, {
    topology: true,
    honorPVReclaimPolicy: true,
    volumeAttributesClass: true,
    crossNamespaceVolumeDataSource: false,
    releaseLeaderElectionOnExit: false,
  });
  assert.equal(defaults.leaderElection.leaseDurationMs, 15_000);
  const set = provisionerOptionsFromFlags(
    new Flags(
      parseFlags({ ...LOGGING_FLAGS, ...PROVISIONER_FLAGS }, [...argv(UPSTREAM_V520), ...argv(NEWER)]),
    ),
    { NODE_NAME: "n1", NAMESPACE: "kube-system", POD_NAME: "p" },
  );
  assert.equal(set.timeoutMs, 30_000);
  assert.equal(set.volumeNameUuidLength, 16);
  assert.equal(set.features.honorPVReclaimPolicy, false);
  assert.equal(set.capacity.enabled, true);
  assert.equal(set.capacity.threads, 2);
  assert.equal(set.capacity.namespace, "kube-system");
  assert.equal(set.nodeDeployment.nodeName, "n1");
  assert.equal(set.snapshotOrphanSweepIntervalMs, 60_000);
  assert.deepEqual(set.leaderElection.labels, { app: "provisioner", tier: "storage" });
});
