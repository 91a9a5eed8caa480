import { test } from "node:test";
import assert from "node:assert/strict";
import { FlagError, Flags, parseFlags } from "../base/index.ts";
import { COMMON_SIDECAR_FLAGS, commonSidecarOptions } from "./flags.ts";

const parse = (argv: string[]): Flags => new Flags(parseFlags(COMMON_SIDECAR_FLAGS, argv));

test("defaults are the upstream ones", () => {
  const options = commonSidecarOptions(parse([]));
  assert.deepEqual(options, {
    kubeconfig: "",
    master: "",
    csiAddress: "/run/csi/socket",
    leaderElection: {
      enabled: false,
      namespace: "",
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 5_000,
      labels: {},
    },
    kubeApiQps: 5,
    kubeApiBurst: 10,
    httpEndpoint: "",
    metricsPath: "/metrics",
    featureGates: {},
    retryIntervalStartMs: 1000,
    retryIntervalMaxMs: 300_000,
  });
});

test("an upstream sidecar command line parses unchanged", () => {
  const options = commonSidecarOptions(
    parse([
      "--csi-address=/csi/csi.sock",
      "--leader-election",
      "--leader-election-namespace=kube-system",
      "--leader-election-lease-duration=30s",
      "--leader-election-renew-deadline=20s",
      "--leader-election-retry-period=10s",
      "--leader-election-labels=app=csi,tier=storage",
      "--kube-api-qps=50",
      "--kube-api-burst=100",
      "--http-endpoint=:8080",
      "--feature-gates=Topology=true,HonorPVReclaimPolicy=false",
      "-retry-interval-start=500ms",
      "-retry-interval-max=1m",
    ]),
  );
  assert.equal(options.csiAddress, "/csi/csi.sock");
  assert.deepEqual(options.leaderElection, {
    enabled: true,
    namespace: "kube-system",
    leaseDurationMs: 30_000,
    renewDeadlineMs: 20_000,
    retryPeriodMs: 10_000,
    labels: { app: "csi", tier: "storage" },
  });
  assert.equal(options.kubeApiQps, 50);
  assert.equal(options.kubeApiBurst, 100);
  assert.equal(options.httpEndpoint, ":8080");
  assert.deepEqual(options.featureGates, { Topology: true, HonorPVReclaimPolicy: false });
  assert.equal(options.retryIntervalStartMs, 500);
  assert.equal(options.retryIntervalMaxMs, 60_000);
});

test("the deprecated --metrics-address still works, but not together with --http-endpoint", () => {
  assert.equal(commonSidecarOptions(parse(["--metrics-address=:9090"])).httpEndpoint, ":9090");
  assert.throws(
    () => commonSidecarOptions(parse(["--metrics-address=:9090", "--http-endpoint=:8080"])),
    /metrics-address and -http-endpoint/,
  );
});

test("bad values name the flag", () => {
  const cases: [string[], RegExp][] = [
    [["--kube-api-qps=0"], /-kube-api-qps/],
    [["--leader-election-lease-duration=5s"], /-leader-election-lease-duration/],
    [["--leader-election-retry-period=9s"], /-leader-election-renew-deadline/],
    [["--retry-interval-max=100ms"], /-retry-interval-max/],
    [["--feature-gates=Topology=maybe"], /-feature-gates: invalid value of Topology=maybe/],
  ];
  for (const [argv, message] of cases) {
    assert.throws(
      () => commonSidecarOptions(parse(argv)),
      (error: unknown) => error instanceof FlagError && message.test(error.message),
      argv.join(" "),
    );
  }
});

test("--leader-election-labels takes csi-lib-utils' key:value items, and key=value; a malformed item names the flag", () => {
  assert.deepEqual(
    commonSidecarOptions(parse(["--leader-election-labels=my-label:my-value,other:v2"])).leaderElection
      .labels,
    { "my-label": "my-value", other: "v2" },
  );
  // Repeated flags add up, as Go's flag.Var of a map does.
  assert.deepEqual(
    commonSidecarOptions(parse(["--leader-election-labels=a=b", "--leader-election-labels=c:d"]))
      .leaderElection.labels,
    { a: "b", c: "d" },
  );
  assert.deepEqual(commonSidecarOptions(parse([])).leaderElection.labels, {});
  assert.throws(
    () => commonSidecarOptions(parse(["--leader-election-labels=a:b:c"])),
    /-leader-election-labels: malformed item in list of labels: a:b:c/,
  );
  assert.throws(() => commonSidecarOptions(parse(["--leader-election-labels=novalue"])), FlagError);
});

test("--automaxprocs is accepted bare or with a value, as a Go bool flag", () => {
  for (const argv of [["--automaxprocs"], ["-automaxprocs=false"], ["--automaxprocs=true"]])
    assert.doesNotThrow(() => commonSidecarOptions(parse(argv)));
  assert.throws(() => parse(["--automaxprocs=maybe"]), /automaxprocs/);
  assert.match(COMMON_SIDECAR_FLAGS.automaxprocs!.help, /no GOMAXPROCS/);
});
