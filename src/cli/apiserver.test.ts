// `csikit apiserver` as a user runs it: prints where it listens and the kubeconfig path,
// serves kubectl, writes --kubeconfig-out, and exits 0 on SIGTERM.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { kubectl, kubectlMissing } from "../../test/harness/kubectl.ts";

const MAIN = new URL("./main.ts", import.meta.url).pathname;

const skip = kubectlMissing();

test("csikit apiserver serves until SIGTERM and prints its URL and kubeconfig", { skip }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-cli-apiserver-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, "admin.kubeconfig");
  const child = spawn(
    process.execPath,
    [MAIN, "apiserver", "--state-dir", join(dir, "state"), "--port", "0", "--kubeconfig-out", out],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  child.stdout.setEncoding("utf8");
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk;
      if (stdout.includes("kubeconfig: ") && stdout.includes(out)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`exited early with ${code}: ${stdout}`)));
  });
  assert.match(stdout, /^API server listening on https:\/\/127\.0\.0\.1:\d+$/m);
  assert.match(stdout, new RegExp(`^kubeconfig: ${join(dir, "state", "kubeconfig")}$`, "m"));
  assert.equal((await stat(out)).mode & 0o077, 0);
  const listed = await kubectl(["get", "namespaces", "-o", "name"], { kubeconfig: out });
  assert.equal(listed.code, 0, `kubectl failed: ${listed.stderr}`);
  const namespaces = listed.stdout;
  assert.match(namespaces, /namespace\/kube-system/);
  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 0);
});

test("csikit apiserver rejects a bad --port", async () => {
  const child = spawn(
    process.execPath,
    [MAIN, "apiserver", "--state-dir", "/nonexistent-never-created", "--port", "70000"],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 2);
  assert.match(stderr, /-port/);
});

test("csikit apiserver names a bad --authorization-mode as kube-apiserver does", async () => {
  const child = spawn(
    process.execPath,
    [MAIN, "apiserver", "--state-dir", "/nonexistent-never-created", "--authorization-mode=Node,Bogus"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 2);
  assert.match(stderr, /authorization-mode "Bogus" is not a valid mode/);
});

/** Runs `csikit apiserver` with args that must fail before it starts; its exit code and stderr. */
async function refused(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(
    process.execPath,
    [MAIN, "apiserver", "--state-dir", "/nonexistent-never-created", ...args],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stderr };
}

test("csikit apiserver --feature-gates: an unknown gate and a locked GA gate are errors naming them", async () => {
  const unknown = await refused(["--feature-gates=VolumeAttributesClass=true,NoSuchGate=true"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /feature-gates: unrecognized feature gate: NoSuchGate/);
  const locked = await refused(["--feature-gates=MutableCSINodeAllocatableCount=false"]);
  assert.equal(locked.code, 2);
  assert.match(
    locked.stderr,
    /cannot set feature gate MutableCSINodeAllocatableCount to false, feature is locked to true/,
  );
  const old = await refused(["--kubernetes-version=1.31"]);
  assert.equal(old.code, 2);
  assert.match(old.stderr, /kubernetes-version: unsupported Kubernetes version "1.31"/);
});

test("csikit apiserver --kubernetes-version=1.34 reports 1.34 to kubectl", { skip }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-cli-apiserver-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const child = spawn(
    process.execPath,
    [
      MAIN,
      "apiserver",
      "--state-dir",
      join(dir, "state"),
      "--kubernetes-version=1.34",
      "--feature-gates=MutableCSINodeAllocatableCount=true",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  child.stdout.setEncoding("utf8");
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk;
      if (/^Kubernetes version: .*\n/m.test(stdout)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`exited early with ${code}: ${stdout}`)));
  });
  assert.match(stdout, /^Kubernetes version: v1\.34\.\d+$/m);
  const version = await kubectl(["version", "-o", "json"], { kubeconfig: join(dir, "state", "kubeconfig") });
  assert.equal(version.code, 0, version.stderr);
  assert.equal(
    (JSON.parse(version.stdout) as { serverVersion: { minor: string } }).serverVersion.minor,
    "34",
  );
  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 0);
});
