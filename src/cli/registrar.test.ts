// `csikit registrar` takes upstream node-driver-registrar v2.17.0's whole flag list (v2.13.0's
// plus --automaxprocs) with its
// defaults, rejects what upstream rejects, and answers the deprecated probe mode with exit 0.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { FlagError, Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { registrarOptionsFromFlags } from "../sidecars/registrar/index.ts";
import { registrarCommand } from "./registrar.ts";

const MAIN = join(import.meta.dirname, "main.ts");

/** `csi-node-driver-registrar --help` of v2.17.0, flag names only (-version is handled by the CLI). */
const UPSTREAM_FLAGS = [
  "automaxprocs",
  "connection-timeout",
  "csi-address",
  "enable-pprof",
  "health-port",
  "http-endpoint",
  "kubelet-registration-path",
  "log-flush-frequency",
  "log-json-info-buffer-size",
  "log-json-split-stream",
  "log-text-info-buffer-size",
  "log-text-split-stream",
  "logging-format",
  "mode",
  "plugin-registration-path",
  "timeout",
  "v",
  "vmodule",
];

function parse(argv: readonly string[]): Flags {
  return new Flags(parseFlags({ ...LOGGING_FLAGS, ...registrarCommand.flags }, argv));
}

test("registrar accepts every upstream v2.17.0 flag, each set, with upstream's meaning", () => {
  const specs = { ...LOGGING_FLAGS, ...registrarCommand.flags };
  for (const name of UPSTREAM_FLAGS) assert.ok(name in specs, `-${name} is not a flag of csikit registrar`);
  const { mode, options, warnings } = registrarOptionsFromFlags(
    parse([
      "-automaxprocs=true",
      "-connection-timeout=5s",
      "-csi-address=/csi/csi.sock",
      "-enable-pprof",
      "-health-port=0",
      "-http-endpoint=:9809",
      "-kubelet-registration-path=/var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock",
      "-log-flush-frequency=10s",
      "-log-json-info-buffer-size=1Ki",
      "-log-json-split-stream=true",
      "-log-text-info-buffer-size=2K",
      "-log-text-split-stream=false",
      "-logging-format=json",
      "-mode=registration",
      "-plugin-registration-path=/registration",
      "-timeout=3s",
      "-v=5",
      "-vmodule=node_register=4",
    ]),
  );
  assert.equal(mode, "registration");
  assert.deepEqual(options, {
    csiAddress: "/csi/csi.sock",
    kubeletRegistrationPath: "/var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock",
    pluginRegistrationPath: "/registration",
    timeoutMs: 3000,
    httpEndpoint: ":9809",
    enablePprof: true,
  });
  assert.deepEqual(warnings, ["--connection-timeout is deprecated and will have no effect"]);
});

test("registrar defaults are upstream's", () => {
  const { mode, options, warnings } = registrarOptionsFromFlags(
    parse(["--kubelet-registration-path=/var/lib/kubelet/plugins/d/csi.sock"]),
  );
  assert.equal(mode, "registration");
  assert.deepEqual(options, {
    csiAddress: "/run/csi/socket",
    kubeletRegistrationPath: "/var/lib/kubelet/plugins/d/csi.sock",
    pluginRegistrationPath: "/registration",
    timeoutMs: 1000,
    httpEndpoint: "",
    enablePprof: false,
  });
  assert.deepEqual(warnings, []);
  // The deprecated port form serves on all interfaces, as upstream's ":" + port.
  assert.equal(
    registrarOptionsFromFlags(parse(["--kubelet-registration-path=/x.sock", "--health-port=9809"])).options
      .httpEndpoint,
    ":9809",
  );
});

test("registrar rejects a missing registration path, both health flags, a bad mode, naming the flag", () => {
  assert.throws(
    () => registrarOptionsFromFlags(parse([])),
    (error: unknown) => {
      assert.ok(error instanceof FlagError);
      assert.match(error.message, /-kubelet-registration-path is required/);
      return true;
    },
  );
  assert.throws(
    () =>
      registrarOptionsFromFlags(
        parse(["--kubelet-registration-path=/x.sock", "--health-port=1", "--http-endpoint=:2"]),
      ),
    /only one of -health-port and -http-endpoint/,
  );
  assert.throws(
    () => registrarOptionsFromFlags(parse(["--kubelet-registration-path=/x.sock", "--mode=nonsense"])),
    /invalid value "nonsense" for flag -mode/,
  );
  assert.throws(() => parse(["--timeout=soon"]), /invalid value "soon" for flag -timeout/);
});

test("csikit registrar: --mode=kubelet-registration-probe exits 0; a missing registration path exits 2", () => {
  const probe = spawnSync(
    process.execPath,
    [MAIN, "registrar", "--mode=kubelet-registration-probe", "--kubelet-registration-path=/x/csi.sock"],
    { encoding: "utf8", timeout: 60_000 },
  );
  assert.equal(probe.status, 0, probe.stderr);
  assert.match(probe.stderr, /deprecated/);
  const missing = spawnSync(process.execPath, [MAIN, "registrar"], { encoding: "utf8", timeout: 60_000 });
  assert.equal(missing.status, 2, missing.stderr);
  assert.match(missing.stderr, /-kubelet-registration-path is required/);
});
