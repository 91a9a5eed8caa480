// `csikit livenessprobe` takes upstream livenessprobe v2.19.0's whole flag list (v2.15.0's plus
// --automaxprocs) with its defaults (--probe-timeout 3s since v2.17) and upstream's address rules.

import assert from "node:assert/strict";
import { test } from "node:test";
import { FlagError, Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { livenessProbeOptionsFromFlags } from "../sidecars/livenessprobe/index.ts";
import { livenessprobeCommand } from "./livenessprobe.ts";

/** `livenessprobe --help` of v2.19.0, flag names only (v2.15.0's and --automaxprocs). */
const UPSTREAM_FLAGS = [
  "automaxprocs",
  "csi-address",
  "health-port",
  "http-endpoint",
  "log-flush-frequency",
  "log-json-info-buffer-size",
  "log-json-split-stream",
  "log-text-info-buffer-size",
  "log-text-split-stream",
  "logging-format",
  "metrics-address",
  "metrics-path",
  "probe-timeout",
  "v",
  "vmodule",
];

function options(argv: readonly string[]) {
  return livenessProbeOptionsFromFlags(
    new Flags(parseFlags({ ...LOGGING_FLAGS, ...livenessprobeCommand.flags }, argv)),
  );
}

test("livenessprobe accepts every upstream v2.19.0 flag, each set, with upstream's meaning", () => {
  const specs = { ...LOGGING_FLAGS, ...livenessprobeCommand.flags };
  for (const name of UPSTREAM_FLAGS)
    assert.ok(name in specs, `-${name} is not a flag of csikit livenessprobe`);
  assert.deepEqual(
    options([
      "-automaxprocs",
      "-csi-address=/csi/csi.sock",
      "-health-port=9808",
      "-http-endpoint=:9898",
      "-log-flush-frequency=10s",
      "-log-json-info-buffer-size=0",
      "-log-json-split-stream=false",
      "-log-text-info-buffer-size=0",
      "-log-text-split-stream=false",
      "-logging-format=text",
      "-metrics-path=/m",
      "-probe-timeout=3s",
      "-v=5",
      "-vmodule=",
    ]),
    {
      csiAddress: "/csi/csi.sock",
      probeTimeoutMs: 3000,
      address: ":9898",
      metricsOnAddress: true,
      metricsPath: "/m",
    },
  );
  // The deprecated pair: /healthz on all interfaces at --health-port, metrics on their own server.
  assert.deepEqual(options(["--health-port=9899", "--metrics-address=:9900"]), {
    csiAddress: "/run/csi/socket",
    probeTimeoutMs: 3000,
    address: "0.0.0.0:9899",
    metricsOnAddress: false,
    metricsAddress: ":9900",
    metricsPath: "/metrics",
  });
});

test("livenessprobe defaults are upstream v2.19's: /healthz on 0.0.0.0:9808, 3s probe timeout, no metrics", () => {
  assert.deepEqual(options([]), {
    csiAddress: "/run/csi/socket",
    probeTimeoutMs: 3000,
    address: "0.0.0.0:9808",
    metricsOnAddress: false,
    metricsPath: "/metrics",
  });
});

test("livenessprobe rejects what upstream rejects, naming the flag", () => {
  const flagError = (pattern: RegExp) => (error: unknown) => {
    assert.ok(error instanceof FlagError);
    assert.match(error.message, pattern);
    return true;
  };
  assert.throws(
    () => options(["--health-port=1234", "--http-endpoint=:1"]),
    flagError(/-health-port and -http-endpoint/),
  );
  assert.throws(
    () => options(["--metrics-address=:2", "--http-endpoint=:1"]),
    flagError(/-metrics-address and -http-endpoint/),
  );
  assert.throws(
    () => options(["--health-port=http"]),
    flagError(/invalid value "http" for flag -health-port/),
  );
  assert.throws(() => options(["--http-endpoint=9808"]), flagError(/for flag -http-endpoint/));
  assert.throws(() => options(["--probe-timeout=0s"]), flagError(/-probe-timeout must be greater than zero/));
});
