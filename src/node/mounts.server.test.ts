// The virtual node with the real hostpath driver and real mounts: stage/publish as bind
// mounts (and loop devices for block), teardown to nothing mounted, and kill -9 of the node
// agent (a child `csikit node` process) followed by a restart that reconstructs from the root
// dir, tears down what no pod wants and leaves nothing mounted twice. As root this file
// re-executes itself under `unshare -m --propagation private`, so every mount vanishes with
// that namespace whatever happens; unprivileged, the tests are skipped saying why.

import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { lstat, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { GVR, kubeRelease } from "../api/index.ts";
import { CsiClient } from "../csi/index.ts";
import { serveHostpathDriver } from "../drivers/index.ts";
import type { KubeClient } from "../kube/index.ts";
import {
  boundClaim,
  csiDriver,
  getPod,
  markAttached,
  persistentVolume,
  pod,
  podRunning,
  runNode,
  runRealRegistrar,
  testServer,
} from "../../test/harness/node.ts";
import { attachmentName, KubeletPaths } from "./index.ts";
import { until } from "../../test/harness/until.ts";
import { serveCsiTap } from "../../test/harness/csi-tap.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";

const NAMESPACE_ENV = "CSIKIT_NODE_IN_MOUNT_NS";
const isRoot = process.getuid?.() === 0;
const inNamespace = process.env[NAMESPACE_ENV] === "1";
const hasUnshare = spawnSync("unshare", ["--version"]).status === 0;
const DRIVER = "hostpath.csi.k8s.io";
const NODE = "node-m";
const NS = "default";
const MIB = 1024 * 1024;
const CLI = fileURLToPath(new URL("../cli/main.ts", import.meta.url));

async function mountPointsUnder(dir: string): Promise<string[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  return text
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(dir + "/"));
}

async function detachLoopsUnder(dir: string): Promise<void> {
  const out = spawnSync("losetup", ["--list", "--noheadings", "--output", "NAME,BACK-FILE"], {
    encoding: "utf8",
  });
  for (const line of (out.stdout ?? "").split("\n")) {
    const [name, file] = line.trim().split(/\s+/, 2);
    if (name && file?.startsWith(dir + "/")) spawnSync("losetup", ["-d", name]);
  }
}

async function unmountUnder(dir: string): Promise<void> {
  for (const point of (await mountPointsUnder(dir)).reverse()) spawnSync("umount", ["-l", point]);
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

interface Setup {
  client: KubeClient;
  kubeconfig: string;
  root: string;
  paths: KubeletPaths;
  driverClient: CsiClient;
  driverPath: string;
}

async function setup(t: TestContext): Promise<Setup> {
  const api = await testServer(t);
  const client = api.client();
  const base = await tempDir(t, "csikit-node-mounts-");
  defer(t, async () => {
    await unmountUnder(base);
    await detachLoopsUnder(base);
  });
  const root = join(base, "kubelet");
  const driver = await serveHostpathDriver({
    endpoint: join(base, "csi.sock"),
    nodeId: NODE,
    stateDir: join(base, "state"),
    allowedPathRoots: [root],
    shutdownGraceMs: 1000,
  });
  defer(t, () => driver.close());
  const driverClient = CsiClient.connect(driver.path);
  defer(t, () => driverClient.close());
  await client.create(GVR.csiDrivers, csiDriver(DRIVER, { attachRequired: true, podInfoOnMount: true }));
  return {
    client,
    kubeconfig: api.kubeconfigPath,
    root,
    paths: new KubeletPaths(root),
    driverClient,
    driverPath: driver.path,
  };
}

/** Creates a hostpath volume, its PV bound to a claim, and plays the attacher for this node. */
async function provision(s: Setup, name: string, options: { block?: boolean } = {}): Promise<string> {
  const capability = options.block
    ? { block: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } }
    : { mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } };
  const created = await s.driverClient.controller.createVolume({
    name,
    capacityRange: { requiredBytes: String(MIB) },
    volumeCapabilities: [capability],
  });
  const handle = created.volume?.volumeId ?? "";
  const published = await s.driverClient.controller.controllerPublishVolume({
    volumeId: handle,
    nodeId: NODE,
    volumeCapability: capability,
    readonly: false,
  });
  await boundClaim(
    s.client,
    NS,
    name,
    persistentVolume(`pv-${name}`, {
      driver: DRIVER,
      handle,
      block: options.block ?? false,
      csi: { volumeAttributes: created.volume?.volumeContext ?? {} },
    }),
    options,
  );
  await markAttached(s.client, {
    name: attachmentName(handle, DRIVER, NODE),
    driver: DRIVER,
    pvName: `pv-${name}`,
    nodeName: NODE,
    metadata: published.publishContext,
  });
  return handle;
}

async function createPod(s: Setup, name: string, claimName: string): Promise<string> {
  const created = await s.client.create(
    GVR.pods,
    pod(NS, name, { nodeName: NODE, volumes: [{ name: "vol", persistentVolumeClaim: { claimName } }] }),
  );
  return created.metadata?.uid ?? "";
}

async function registered(s: Setup, t: TestContext): Promise<void> {
  await runRealRegistrar(t, s.client, { rootDir: s.root, nodeName: NODE, csiAddress: s.driverPath });
}

/** `csikit node` as a child process (killed with SIGKILL in t.after if still running). */
function startNodeProcess(t: TestContext, s: Setup): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      CLI,
      "node",
      `--node-name=${NODE}`,
      `--root-dir=${s.root}`,
      `--kubeconfig=${s.kubeconfig}`,
      "--plugin-rescan-interval=500ms",
      "--port=0",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  defer(t, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    if (stderr.includes("failed")) t.diagnostic(stderr);
  });
  return child;
}

function kill9(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

const SKIP = !isRoot ? "needs root to mount (run the tests as root, or in `unshare -rm`)" : false;

if (isRoot && hasUnshare && !inNamespace) {
  test("virtual node with real mounts (in a private mount namespace)", { timeout: 600_000 }, async () => {
    const env: Record<string, string | undefined> = { ...process.env, [NAMESPACE_ENV]: "1" };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(
      "unshare",
      [
        "-m",
        "--propagation",
        "private",
        process.execPath,
        "--test",
        "--test-reporter=spec",
        fileURLToPath(import.meta.url),
      ],
      { env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, output);
    assert.match(output, /pass 5/, output);
  });
} else {
  for (const minor of ["1.37", "1.36"] as const) {
    test(
      `SELinuxMount through a CSI tap in front of hostpath, node at ${minor}: ${minor === "1.37" ? "context= in" : "no context= in"} the mount_flags of a ReadWriteOnce volume's stage and publish; real mounts`,
      { skip: SKIP },
      async (t) => {
        const s = await setup(t);
        await s.client.delete(GVR.csiDrivers, DRIVER);
        await s.client.create(
          GVR.csiDrivers,
          csiDriver(DRIVER, { attachRequired: true, seLinuxMount: true }),
        );
        const tap = await serveCsiTap({ endpoint: join(s.root, "..", "tap.sock"), target: s.driverPath });
        defer(t, () => tap.close());
        // An SELinux host as far as the node knows; hostpath binds without the option.
        await runNode(t, s.client, {
          nodeName: NODE,
          rootDir: s.root,
          seLinux: true,
          featureGates: kubeRelease(minor).gates,
        });
        await runRealRegistrar(t, s.client, { rootDir: s.root, nodeName: NODE, csiAddress: tap.path });
        await provision(s, "data");
        const created = pod(NS, "app", {
          nodeName: NODE,
          volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "data" } }],
        });
        created.spec!.securityContext = { seLinuxOptions: { level: "s0:c7,c8" } };
        created.spec!.containers[0]!.volumeMounts = [{ name: "vol", mountPath: "/data" }];
        const uid = (await s.client.create(GVR.pods, created)).metadata?.uid ?? "";
        await until(() => podRunning(s.client, NS, "app"), "pod Running");
        assert.ok((await mountPointsUnder(s.root)).includes(s.paths.publishTarget(uid, "pv-data")));
        const want = minor === "1.37" ? ['context="system_u:object_r:container_file_t:s0:c7,c8"'] : [];
        for (const method of ["NodeStageVolume", "NodePublishVolume"]) {
          const calls = tap.callsOf(method);
          assert.equal(calls.length, 1, method);
          const capability = calls[0]!.request.volumeCapability as { mount?: { mountFlags?: string[] } };
          assert.deepEqual(capability.mount?.mountFlags ?? [], want, `${method} mount_flags`);
        }
        await s.client.delete(GVR.pods, "app", { namespace: NS });
        await until(async () => (await getPod(s.client, NS, "app")) === undefined, "pod gone");
      },
    );
  }
  test(
    "filesystem PV: real bind mounts at the kubelet paths, data visible through the pod dir, nothing left after teardown",
    { skip: SKIP },
    async (t) => {
      const s = await setup(t);
      await runNode(t, s.client, { nodeName: NODE, rootDir: s.root });
      await registered(s, t);
      const handle = await provision(s, "data");
      const uid = await createPod(s, "app", "data");
      await until(() => podRunning(s.client, NS, "app"), "pod Running");
      const target = s.paths.publishTarget(uid, "pv-data");
      const staging = s.paths.stagingTarget(DRIVER, handle);
      const mounts = await mountPointsUnder(s.root);
      assert.ok(mounts.includes(staging), `staging mounted: ${mounts.join(", ")}`);
      assert.ok(mounts.includes(target), `target mounted: ${mounts.join(", ")}`);
      await writeFile(join(target, "hello.txt"), "hi");
      assert.equal(await readFile(join(staging, "hello.txt"), "utf8"), "hi", "one volume behind both mounts");
      await s.client.delete(GVR.pods, "app", { namespace: NS });
      await until(async () => (await getPod(s.client, NS, "app")) === undefined, "pod gone");
      await until(async () => (await mountPointsUnder(s.root)).length === 0, "nothing mounted");
      await until(async () => !(await exists(s.paths.podDir(uid))), "pod dir removed");
      await until(async () => !(await exists(s.paths.stagingDir(DRIVER, handle))), "staging dir removed");
    },
  );

  test(
    "raw block PV: loop device staged and published as block files, removed at teardown",
    { skip: SKIP },
    async (t) => {
      const s = await setup(t);
      await runNode(t, s.client, { nodeName: NODE, rootDir: s.root });
      await registered(s, t);
      await provision(s, "raw", { block: true });
      const uid = await createPod(s, "blk", "raw");
      await until(() => podRunning(s.client, NS, "blk"), "pod Running");
      const target = s.paths.blockPublishTarget("pv-raw", uid);
      assert.ok(
        (await mountPointsUnder(s.root)).includes(target),
        "block target is a mount of the loop device",
      );
      const link = s.paths.podDeviceLink(uid, "pv-raw");
      assert.ok((await lstat(link)).isSymbolicLink());
      await s.client.delete(GVR.pods, "blk", { namespace: NS });
      await until(async () => (await getPod(s.client, NS, "blk")) === undefined, "pod gone");
      await until(async () => (await mountPointsUnder(s.root)).length === 0, "nothing mounted");
      assert.equal(await exists(link), false);
    },
  );

  test(
    "kill -9 of the node agent mid-operation, restart: reconstruction tears down what pods no longer want, finishes the rest, mounts nothing twice",
    { skip: SKIP },
    async (t) => {
      const s = await setup(t);
      const agents: ChildProcess[] = [];
      // Killed here rather than in t.after: the API server's stop (an earlier after hook)
      // waits for the agent's watches to end.
      try {
        await killScenario(t, s, agents);
      } finally {
        for (const agent of agents) await kill9(agent);
      }
    },
  );
}

async function killScenario(t: TestContext, s: Setup, agents: ChildProcess[]): Promise<void> {
  let agent = startNodeProcess(t, s);
  agents.push(agent);
  await registered(s, t);
  await provision(s, "a");
  await provision(s, "b");
  const handleC = await provision(s, "c");
  const uidA = await createPod(s, "pod-a", "a");
  const uidB = await createPod(s, "pod-b", "b");
  await until(
    async () => (await podRunning(s.client, NS, "pod-a")) && (await podRunning(s.client, NS, "pod-b")),
    "pods a and b Running",
  );
  // Mid-operation: pod c's publish metadata is written just before NodePublishVolume.
  const uidC = await createPod(s, "pod-c", "c");
  await until(
    () => exists(join(s.paths.podVolumeDir(uidC, "pv-c"), "vol_data.json")),
    "pod c publish started",
  );
  await kill9(agent);

  // While the agent is down: pod a is deleted gracefully, pod b is force-deleted (gone from the API).
  await s.client.delete(GVR.pods, "pod-a", { namespace: NS });
  await s.client.request({
    method: "DELETE",
    path: s.client.resourcePath(GVR.pods, { namespace: NS, name: "pod-b" }),
    body: { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0 },
  });
  assert.ok(
    (await mountPointsUnder(s.root)).includes(s.paths.publishTarget(uidB, "pv-b")),
    "b still mounted",
  );

  agent = startNodeProcess(t, s);
  agents.push(agent);
  await until(async () => (await getPod(s.client, NS, "pod-a")) === undefined, "pod a deletion finished", {
    timeoutMs: 30_000,
  });
  await until(() => podRunning(s.client, NS, "pod-c"), "pod c Running", { timeoutMs: 30_000 });
  await until(
    async () => {
      const mounts = await mountPointsUnder(s.root);
      return !mounts.some((m) => m.includes(uidA) || m.includes(uidB));
    },
    "a and b unmounted",
    { timeoutMs: 30_000 },
  );
  const targetC = s.paths.publishTarget(uidC, "pv-c");
  const stagingC = s.paths.stagingTarget(DRIVER, handleC);
  await until(async () => (await mountPointsUnder(s.root)).length <= 2, "a and b unstaged", {
    timeoutMs: 30_000,
  });
  const mounts = await mountPointsUnder(s.root);
  assert.equal(mounts.filter((m) => m === targetC).length, 1, `pod c published once: ${mounts.join(", ")}`);
  assert.equal(mounts.filter((m) => m === stagingC).length, 1, `volume c staged once: ${mounts.join(", ")}`);
  assert.deepEqual(mounts.sort(), [stagingC, targetC].sort(), "only volume c is mounted");
  await until(
    async () => !(await exists(s.paths.podDir(uidA))) && !(await exists(s.paths.podDir(uidB))),
    "pod dirs of a and b removed",
  );

  await s.client.delete(GVR.pods, "pod-c", { namespace: NS });
  await until(async () => (await getPod(s.client, NS, "pod-c")) === undefined, "pod c gone", {
    timeoutMs: 30_000,
  });
  await until(async () => (await mountPointsUnder(s.root)).length === 0, "nothing mounted");
}
