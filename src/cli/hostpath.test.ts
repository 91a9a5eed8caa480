import { test } from "node:test";
import assert from "node:assert/strict";
import { FlagError, Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { hostpathCommand, hostpathOptions, parseCapacity } from "./hostpath.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CsiClient } from "../csi/index.ts";

const MAIN = join(import.meta.dirname, "main.ts");

function options(argv: string[]): ReturnType<typeof hostpathOptions> {
  return hostpathOptions(new Flags(parseFlags({ ...LOGGING_FLAGS, ...hostpathCommand.flags }, argv)));
}

test("hostpath flags: csikit defaults (two differ from upstream, and the help says so), quantities, upstream spellings", () => {
  const defaults = options(["--nodeid=n1"]);
  // Differ from upstream csi-driver-host-path (unix://tmp/csi.sock, enable-attach=false).
  assert.equal(defaults.endpoint, "unix:///csi/csi.sock");
  assert.equal(defaults.enableAttach, true);
  assert.match(hostpathCommand.flags.endpoint?.help ?? "", /\(upstream default: unix:\/\/tmp\/csi\.sock\)/);
  assert.match(hostpathCommand.flags["enable-attach"]?.help ?? "", /\(upstream default: false;/);
  // Same as upstream.
  assert.equal(defaults.driverName, "hostpath.csi.k8s.io");
  assert.equal(defaults.enableTopology, true);
  assert.equal(defaults.nodeService, true);
  assert.equal(defaults.controllerService, true);
  assert.equal(defaults.maxVolumeSize, 1024 ** 4);
  assert.deepEqual(defaults.capacity, {});
  assert.deepEqual(defaults.allowedPathRoots, ["/var/lib/kubelet"]);
  const custom = options([
    "-nodeid",
    "n2",
    "--capacity=fast=100Mi",
    "--capacity",
    "1Gi",
    "--max-volume-size=16Mi",
    "--enable-topology=false",
    "--controller-service=false",
    "--statedir=/srv/hp",
    "--maxvolumespernode=3",
    "--allowed-path-roots=/a,/b",
    "--allowed-path-roots",
    "/c",
  ]);
  assert.deepEqual(custom.allowedPathRoots, ["/a", "/b", "/c"]);
  assert.deepEqual(custom.capacity, { fast: 100 * 1024 * 1024, "": 1024 ** 3 });
  assert.equal(custom.maxVolumeSize, 16 * 1024 * 1024);
  assert.equal(custom.enableTopology, false);
  assert.equal(custom.controllerService, false);
  assert.equal(custom.stateDir, "/srv/hp");
  assert.equal(custom.maxVolumesPerNode, 3);
});

test("hostpath flags: missing node id and bad quantities name the flag", () => {
  assert.throws(
    () => options([]),
    (e: unknown) => e instanceof FlagError && /-nodeid/.test(e.message),
  );
  assert.throws(() => parseCapacity(["fast=lots"]), /-capacity/);
  assert.throws(() => options(["--nodeid=n", "--max-volume-size=-1"]), /-max-volume-size/);
});

test("csikit hostpath: serves, survives kill -9 with its state, stops cleanly on SIGTERM", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "hostpath-cli-"));
  const socket = join(dir, "csi.sock");
  const children: ChildProcess[] = [];
  const client = CsiClient.connect(`unix://${socket}`, { timeoutMs: 20_000 });
  t.after(async () => {
    client.close();
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  });
  const startDriver = (): ChildProcess => {
    const child = spawn(
      process.execPath,
      [
        MAIN,
        "hostpath",
        "--nodeid=cli-node",
        `--endpoint=unix://${socket}`,
        `--state-dir=${join(dir, "state")}`,
      ],
      { stdio: "ignore" },
    );
    children.push(child);
    return child;
  };
  const exited = (child: ChildProcess): Promise<number | null> =>
    new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  const capability = { mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } };

  const first = startDriver();
  await client.waitForReady({ timeoutMs: 30_000 });
  const created = await client.controller.createVolume({
    name: "survivor",
    volumeCapabilities: [capability],
  });
  const killed = exited(first);
  first.kill("SIGKILL");
  await killed;

  const second = startDriver();
  await client.waitForReady({ timeoutMs: 30_000 });
  const listed = await client.controller.listVolumes({});
  assert.deepEqual(
    listed.entries.map((e) => e.volume?.volumeId),
    [created.volume?.volumeId],
  );
  const stopped = exited(second);
  second.kill("SIGTERM");
  assert.equal(await stopped, 0);
  await assert.rejects(stat(socket), { code: "ENOENT" });
});
