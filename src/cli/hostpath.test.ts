import { test } from "node:test";
import assert from "node:assert/strict";
import { FlagError, Flags, KLOG_FLAGS, LOGGING_FLAGS, klogFlagWarnings, parseFlags } from "../base/index.ts";
import { hostpathCommand, hostpathOptions, ignoredFlagWarnings, parseCapacity } from "./hostpath.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CsiClient } from "../csi/index.ts";

const MAIN = join(import.meta.dirname, "main.ts");

function flags(argv: readonly string[]): Flags {
  return new Flags(parseFlags({ ...LOGGING_FLAGS, ...hostpathCommand.flags }, argv));
}

function options(argv: string[]): ReturnType<typeof hostpathOptions> {
  return hostpathOptions(flags(argv));
}

/**
 * Every flag of upstream hostpathplugin v1.18 (cmd/hostpathplugin/main.go: v1.16.1's, and
 * v1.17's -automaxprocs and -enable-list-snapshots) and of klog, in upstream's single-dash form,
 * each set to a non-default value of its type.
 */
const UPSTREAM_ARGV: readonly string[] = [
  "-accepted-mutable-parameter-names=iops,throughput",
  "-attach-limit=7",
  "-automaxprocs=true",
  "-capacity=slow=1Gi",
  "-check-volume-lifecycle=true",
  "-disable-controller-expansion=true",
  "-disable-node-expansion=true",
  "-drivername=hostpath.csi.k8s.io",
  "-enable-attach=true",
  "-enable-controller-modify-volume=true",
  "-enable-list-snapshots=false",
  "-enable-snapshot-metadata=true",
  "-enable-topology=false",
  "-enable-volume-expansion=true",
  "-endpoint=unix:///csi/csi.sock",
  "-ephemeral=false",
  "-max-volume-size=1073741824",
  "-max-volume-size-node=536870912",
  "-maxvolumespernode=9",
  "-node-expand-required=true",
  "-nodeid=node-1",
  "-proxy-endpoint=",
  "-snapshot-metadata-block-type=VARIABLE_LENGTH",
  "-statedir=/csi-data-dir",
  "-v=5",
  "-logtostderr=true",
  "-alsologtostderr=false",
  "-log_dir=/tmp",
  "-log_file=/tmp/hostpath.log",
  "-log_file_max_size=100",
  "-stderrthreshold=INFO",
  "-vmodule=",
  "-add_dir_header=false",
  "-skip_headers=false",
  "-skip_log_headers=false",
  "-one_output=false",
  "-log_backtrace_at=:0",
];

test("hostpath accepts every upstream hostpathplugin v1.18 flag and klog's, with upstream's meaning", () => {
  const names = UPSTREAM_ARGV.map((arg) => arg.slice(1, arg.indexOf("=")));
  for (const name of names) {
    assert.ok(
      name in hostpathCommand.flags || name in LOGGING_FLAGS,
      `-${name} is not a flag of csikit hostpath`,
    );
  }
  for (const name of Object.keys(KLOG_FLAGS)) assert.ok(names.includes(name), `-${name} tested`);
  const parsed = flags(UPSTREAM_ARGV);
  const got = hostpathOptions(parsed);
  assert.deepEqual(got.acceptedMutableParameterNames, ["iops", "throughput"]);
  assert.equal(got.attachLimit, 7);
  assert.deepEqual(got.capacity, { slow: 1024 ** 3 });
  assert.equal(got.disableControllerExpansion, true);
  assert.equal(got.disableNodeExpansion, true);
  assert.equal(got.enableControllerModifyVolume, true);
  assert.equal(got.enableListSnapshots, false);
  assert.equal(got.enableSnapshotMetadata, true);
  assert.equal(got.snapshotMetadataBlockType, "VARIABLE_LENGTH");
  assert.equal(got.enableTopology, false);
  assert.equal(got.enableVolumeExpansion, true);
  assert.equal(got.maxVolumeSize, 1024 ** 3);
  assert.equal(got.maxVolumeSizeNode, 512 * 1024 ** 2);
  assert.equal(got.maxVolumesPerNode, 9);
  assert.equal(got.stateDir, "/csi-data-dir");
  // Everything above is honoured or has no effect under -logtostderr=true, as in klog.
  assert.deepEqual([...ignoredFlagWarnings(parsed), ...klogFlagWarnings(parsed)], []);
  // Upstream's -1 (a random limit per NodeGetInfo) is accepted in both flag forms.
  assert.equal(options(["-nodeid=n", "-attach-limit=-1"]).attachLimit, -1);
  assert.equal(options(["-nodeid=n", "-attach-limit", "-1"]).attachLimit, -1);
  // GET_SNAPSHOT is on, as upstream v1.18; =false withholds it for older sidecars.
  assert.equal(options(["-nodeid=n"]).enableAlphaCapabilities, true);
  assert.equal(options(["-nodeid=n", "-enable-alpha-capabilities=false"]).enableAlphaCapabilities, false);
  // ListSnapshots is on by default, as upstream's -enable-list-snapshots.
  assert.equal(options(["-nodeid=n"]).enableListSnapshots, true);
  // -node-expand-required is the deprecated name of -enable-volume-expansion.
  assert.equal(options(["-nodeid=n", "-node-expand-required=false"]).enableVolumeExpansion, false);
  assert.throws(
    () => options(["-nodeid=n", "-snapshot-metadata-block-type=SOMETIMES"]),
    /-snapshot-metadata-block-type: want FIXED_LENGTH or VARIABLE_LENGTH/,
  );
  // Spellings upstream never had are not accepted as if they were upstream's.
  assert.throws(
    () => options(["-nodeid=n", "-maxvolumesize=1Gi"]),
    /flag provided but not defined: -maxvolumesize/,
  );
});

test("hostpath: upstream flags csikit cannot honour are accepted with a one-line warning saying why", () => {
  const parsed = flags([
    "-nodeid=n",
    "-proxy-endpoint=unix:///tmp/mock.sock",
    "-check-volume-lifecycle=false",
    "-logtostderr=false",
    "-log_dir=/var/log",
    "-vmodule=controller=5",
  ]);
  assert.deepEqual(ignoredFlagWarnings(parsed), [
    "-proxy-endpoint is ignored: csikit embeds no Kubernetes e2e mock driver to proxy to; serving the hostpath driver",
    "-check-volume-lifecycle=false is ignored: csikit always enforces the volume lifecycle (see docs/hostpath.md)",
  ]);
  assert.deepEqual(klogFlagWarnings(parsed), [
    "-logtostderr=false is ignored: csikit always logs to standard error, never to files",
    "-log_dir is ignored: csikit writes no log files",
    "-vmodule is ignored: csikit has one verbosity per process (-v)",
  ]);
});

test("hostpath: ModifyVolume is off by default and then accepts every key, as upstream", () => {
  const defaults = options(["--nodeid=n1"]);
  assert.equal(defaults.enableControllerModifyVolume, false);
  assert.deepEqual(defaults.acceptedMutableParameterNames, []);
  assert.match(hostpathCommand.flags["allowed-path-roots"]?.help ?? "", /csikit's own/);
  assert.equal(hostpathCommand.flags["allowed-path-roots"]?.default, "/var/lib/kubelet");
});

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

test("csikit hostpath: started with every upstream flag, serves, survives kill -9 with its state, stops cleanly on SIGTERM", async (t) => {
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
        // An upstream DaemonSet's argument list starts it (capacity left out: the volume below
        // has no kind); the later flags point it at this test's dirs.
        ...UPSTREAM_ARGV.filter((arg) => !arg.startsWith("-capacity")),
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
