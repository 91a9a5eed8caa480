// A resumed `up` state dir is made private again before anything reads it: keys, tokens,
// kubeconfigs, logs, records and their folders lose group/other access, while what the volumes
// hold (the driver's volume data, the nodes' pod dirs) keeps the modes pods rely on, and a
// symlink is never followed. Records are written atomically, without a predictable temp name.

import assert from "node:assert/strict";
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { namesCreatedDuring, UNPREDICTABLE_TEMP } from "../../test/harness/temp-names.ts";
import { writeComponentKubeconfig } from "./identities.ts";
import { ClusterLayout, nodeSpecs, shortSocketRoot, SOCKET_PATH_BUDGET } from "./layout.ts";

const modeOf = async (path: string): Promise<number> => (await lstat(path)).mode & 0o777;

test("a resumed state dir is tightened (0700 dirs, 0600 files); volume data and symlink targets are left alone", async (t) => {
  const base = await mkdtemp(join(tmpdir(), "csikit-layout-"));
  t.after(() => rm(base, { recursive: true, force: true }));
  const state = join(base, "state");
  const loose = async (path: string, text: string | undefined, mode: number): Promise<string> => {
    if (text === undefined) await mkdir(path, { recursive: true });
    else await writeFile(path, text);
    await chmod(path, mode);
    return path;
  };
  const layout = new ClusterLayout(state);
  await layout.create();
  // What the cluster keeps, loosened as a copy or restore with a loose umask leaves it.
  const pki = await loose(join(state, "pki"), undefined, 0o755);
  const privateFiles = [
    await loose(join(pki, "ca.key"), "key", 0o644),
    await loose(join(pki, "token"), "token", 0o640),
    await loose(join(state, "kubeconfig"), "config", 0o644),
    await loose(layout.kubeconfigOf("provisioner"), "config", 0o644),
    await loose(layout.tokenAuthFile, "t,u,u,g", 0o604),
    await loose(layout.logOf("apiserver"), "log", 0o644),
    await loose(join(state, "hostpath"), undefined, 0o755),
    await loose(join(state, "hostpath", "controller.json"), "{}", 0o644),
  ].filter((path) => !path.endsWith("hostpath"));
  const privateDirs = [
    pki,
    layout.identitiesDir,
    layout.logsDir,
    join(state, "hostpath"),
    layout.rootOf("node-1"),
  ];
  for (const dir of [layout.identitiesDir, layout.logsDir]) await chmod(dir, 0o755);
  await loose(layout.rootOf("node-1"), undefined, 0o755);
  const script = await loose(join(state, "driver.sh"), "#!/bin/sh\n", 0o755);
  // What the volumes hold: modes that belong to the pods.
  const volume = await loose(join(state, "hostpath", "volumes", "vol-1"), undefined, 0o777);
  const volumeFile = await loose(join(volume, "data.txt"), "data", 0o666);
  const podVolume = await loose(
    join(layout.rootOf("node-1"), "pods", "uid-1", "volumes", "kubernetes.io~empty-dir", "scratch"),
    undefined,
    0o777,
  );
  // A symlink out of the state dir: its target is not ours to change.
  const outside = await loose(join(base, "outside.txt"), "other", 0o644);
  await symlink(outside, join(state, "link"));

  const changed = await layout.tighten();

  for (const path of privateFiles) assert.equal(await modeOf(path), 0o600, path);
  for (const path of privateDirs) assert.equal(await modeOf(path), 0o700, path);
  assert.equal(await modeOf(state), 0o700);
  assert.equal(await modeOf(script), 0o700, "an executable stays executable by its owner");
  assert.equal(await modeOf(volume), 0o777, "volume data keeps its mode");
  assert.equal(await modeOf(volumeFile), 0o666);
  assert.equal(await modeOf(podVolume), 0o777, "a pod's emptyDir keeps its mode");
  assert.equal(await modeOf(outside), 0o644, "a symlink is not followed");
  assert.ok(changed >= privateFiles.length + 4, `changed ${changed}`);
  assert.equal(await layout.tighten(), 0, "nothing left to change");
});

test("the cluster record and a component kubeconfig are written 0600 through unpredictable temp names", async (t) => {
  const state = await mkdtemp(join(tmpdir(), "csikit-layout-"));
  t.after(() => rm(state, { recursive: true, force: true }));
  const layout = new ClusterLayout(state);
  await layout.create();
  // A symlink planted at the record's own path is replaced, never written through.
  const victim = join(state, "victim.txt");
  await writeFile(victim, "victim\n", { mode: 0o644 });
  await symlink(victim, layout.recordPath);
  const names = await namesCreatedDuring(state, "cluster.json", () =>
    layout.writeRecord({ port: 1234, nodes: nodeSpecs(1), driverName: "hostpath.csi.k8s.io" }),
  );
  const temps = names.filter((name) => name !== "cluster.json");
  assert.ok(temps.length > 0 && temps.every((name) => UNPREDICTABLE_TEMP.test(name)), names.join(" "));
  assert.equal((await lstat(layout.recordPath)).isSymbolicLink(), false);
  assert.equal(await modeOf(layout.recordPath), 0o600);
  assert.equal(await readFile(victim, "utf8"), "victim\n");
  assert.equal((await layout.readRecord())?.port, 1234);

  const kubeconfigs = await namesCreatedDuring(layout.identitiesDir, "provisioner.kubeconfig", async () => {
    await writeComponentKubeconfig(
      layout,
      "provisioner",
      { server: "https://127.0.0.1:1", caData: "Y2E=" },
      "tok",
    );
  });
  const kubeconfigTemps = kubeconfigs.filter((name) => name !== "provisioner.kubeconfig");
  assert.ok(
    kubeconfigTemps.length > 0 && kubeconfigTemps.every((name) => UNPREDICTABLE_TEMP.test(name)),
    kubeconfigs.join(" "),
  );
  assert.equal(await modeOf(layout.kubeconfigOf("provisioner")), 0o600);
  for (const dir of [state, layout.identitiesDir])
    assert.deepEqual(
      (await readdir(dir)).filter((name) => name.includes("tmp")),
      [],
      dir,
    );
});

test("a deep state dir gets its sockets in a short private dir, recorded for the next run; a shallow one keeps them", async (t) => {
  const base = await mkdtemp(join(tmpdir(), "csikit-layout-"));
  const deep = new ClusterLayout(join(base, "x".repeat(90), "state"));
  t.after(async () => {
    await deep.removeSocketRoot();
    await rm(base, { recursive: true, force: true });
  });
  const shallow = new ClusterLayout(join(base, "s"));
  await shallow.create();
  await shallow.placeSockets(["node-1"], "hostpath.csi.k8s.io");
  assert.equal(shallow.socketRoot, undefined);
  assert.equal(shallow.controllerSocket, join(base, "s", "sockets", "controller.sock"));

  await deep.create();
  await deep.placeSockets(["node-1", "node-2"], "hostpath.csi.k8s.io");
  const root = deep.socketRoot;
  assert.ok(root !== undefined && root === shortSocketRoot(deep.stateDir));
  assert.equal(await modeOf(root), 0o700);
  assert.equal((await readFile(deep.socketRootFile, "utf8")).trim(), root);
  for (const path of [deep.controllerSocket, deep.nodeSocketOf("node-2", "hostpath.csi.k8s.io")])
    assert.ok(path.startsWith(root + "/") && Buffer.byteLength(path) <= SOCKET_PATH_BUDGET, path);
  // The node agent finds the registrar's socket through its kubelet dir's plugins_registry.
  const link = join(deep.rootOf("node-1"), "plugins_registry");
  assert.equal(await realpath(link), deep.registrationDirOf("node-1"));
  // A second run (resume) finds the recorded dir, even with the dir itself gone.
  await deep.removeSocketRoot();
  const again = new ClusterLayout(deep.stateDir);
  await again.placeSockets(["node-1", "node-2"], "hostpath.csi.k8s.io");
  assert.equal(again.socketRoot, root);
  assert.equal((await lstat(again.registrationDirOf("node-2"))).isDirectory(), true);
  // Someone else's dir in its place is refused, not used.
  await again.removeSocketRoot();
  await symlink(base, root);
  t.after(() => rm(root, { force: true }));
  await assert.rejects(
    again.placeSockets(["node-1"], "hostpath.csi.k8s.io"),
    /not a directory of this user's/,
  );
});
