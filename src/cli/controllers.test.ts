// `csikit controllers` as a user runs it (a child process against the real API server): the
// loops `--controllers` selects run and bind a claim, the leader Lease is kube-system/
// kube-controller-manager, SIGTERM stops it with exit 0; an unknown loop name is exit 2.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { GVR } from "../api/index.ts";
import { LEASES, type Lease } from "../kube/index.ts";
import { pv, pvc, startTestServer, waitClaimBound } from "../../test/harness/controllers.ts";
import { until } from "../../test/harness/until.ts";

const MAIN = new URL("./main.ts", import.meta.url).pathname;

test("csikit controllers --controllers=*,-garbage-collector-controller runs the PV loops under the KCM lease", async (t) => {
  const env = await startTestServer();
  t.after(() => env.stop());
  const client = env.client();
  const child = spawn(
    process.execPath,
    [
      MAIN,
      "controllers",
      "--kubeconfig",
      env.kubeconfigPath,
      "--controllers=*,-garbage-collector-controller",
      "--leader-elect-retry-period=200ms",
      "--leader-elect-renew-deadline=2s",
      "--leader-elect-lease-duration=3s",
      "--secure-port=0",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));

  const started = await until(
    () => output.split("\n").find((line) => line.includes("controllers started")),
    "the started line",
    { timeoutMs: 120_000 }, // a child process on a loaded machine: start-up alone can take tens of seconds
  );
  for (const name of [
    "persistentvolume-binder-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
  ])
    assert.ok(started.includes(name), `${name} in ${started}`);
  assert.ok(!started.includes("garbage-collector-controller"), started);

  const lease = await client.get<Lease>(LEASES, "kube-controller-manager", { namespace: "kube-system" });
  assert.ok(lease.spec?.holderIdentity);
  await client.create(GVR.persistentVolumes, pv("cli-v", { storageClassName: "cli" }));
  await client.create(GVR.persistentVolumeClaims, pvc("cli-c", { storageClassName: "cli" }));
  // A child process on a loaded machine syncs its informers slowly: allow for it.
  assert.equal((await waitClaimBound(client, "cli-c", 120_000)).spec?.volumeName, "cli-v");

  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 0, output);
  // Released on the way out, so a standby takes over at once.
  const released = await client.get<Lease>(LEASES, "kube-controller-manager", { namespace: "kube-system" });
  assert.equal(released.spec?.holderIdentity ?? "", "");
});

test("csikit controllers: an unknown loop name is a usage error naming it", () => {
  const result = spawnSync(process.execPath, [MAIN, "controllers", "--controllers=*,-nosuch"], {
    encoding: "utf8",
  });
  assert.equal(result.status, 2);
  assert.match(result.stderr, /"nosuch" is not in the list of known controllers/);
});
