import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathProblem, isInside, resolveRoots } from "./paths.ts";
import { HostpathConfig } from "./driver.ts";
import { ephemeralDirName, isSnapshotId, isVolumeId, newSnapshotId, newVolumeId } from "./ids.ts";

test("paths: hostile and sloppy paths are refused with a reason", () => {
  const rules = { stateDir: "/var/lib/hostpath", allowedRoots: ["/var/lib/kubelet", "/var/lib/hostpath"] };
  const cases: Array<[string, RegExp | undefined]> = [
    ["/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/v/mount", undefined],
    ["relative/path", /absolute/],
    ["/a/../etc", /\.\./],
    ["/a/./b", /normalized/],
    ["/a//b", /normalized/],
    ["/a/b/", /normalized/],
    ["/", /root/],
    ["/a/\u0000b", /control/],
    ["/var/lib/hostpath", /state directory/],
    ["/var/lib/hostpath/volumes/vol-1", /state directory/],
    ["/var/lib/hostpathX/ok", /not strictly inside an allowed root/],
    ["/var/lib/kubelet/x", undefined],
    ["/var/lib/kubelet", /not strictly inside an allowed root \(--allowed-path-roots: \/var\/lib\/kubelet, /],
    ["/var/lib/kubeletX/x", /allowed root/],
    ["/opt", /allowed root/],
    ["/opt/x", /allowed root/],
    ["/" + "a".repeat(5000), /longer/],
  ];
  for (const [path, expected] of cases) {
    const problem = pathProblem(path, rules);
    if (expected === undefined) assert.equal(problem, undefined, path);
    else assert.match(problem ?? "", expected, path);
  }
  assert.equal(isInside("/a/b", "/a/"), true);
  assert.equal(isInside("/ab", "/a"), false);
});

test("ids: generated IDs validate; anything else does not", () => {
  const volume = newVolumeId();
  const snapshot = newSnapshotId();
  assert.equal(isVolumeId(volume), true);
  assert.equal(isSnapshotId(snapshot), true);
  assert.equal(isVolumeId(snapshot), false);
  for (const bad of ["", "../etc", "vol-../../x", `${volume}/x`, volume.toUpperCase(), `${volume}\n`])
    assert.equal(isVolumeId(bad), false, bad);
  assert.match(ephemeralDirName("../../etc/passwd"), /^eph-[0-9a-f]{64}$/);
});

test("allowed roots: validated, normalized, default kubelet root, symlinks resolved", async (t) => {
  const base = { nodeId: "n", stateDir: "/tmp/x" };
  assert.deepEqual(new HostpathConfig(base).allowedPathRoots, ["/var/lib/kubelet"]);
  assert.deepEqual(new HostpathConfig({ ...base, allowedPathRoots: ["/a/b/", "/c//d"] }).allowedPathRoots, [
    "/a/b",
    "/c/d",
  ]);
  for (const bad of [[], ["relative"], ["/"], ["//"]])
    assert.throws(() => new HostpathConfig({ ...base, allowedPathRoots: bad }), /--allowed-path-roots/);
  const dir = await mkdtemp(join(tmpdir(), "hostpath-roots-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const real = join(dir, "real");
  await mkdir(real);
  const link = join(dir, "link");
  await symlink(real, link);
  const missing = join(dir, "missing");
  const roots = await resolveRoots([link, missing]);
  assert.deepEqual(roots, [link, await realpath(real), missing]);
  const rules = { stateDir: "/state", allowedRoots: roots };
  // The CO may name a path through the configured spelling or the real one.
  assert.equal(pathProblem(join(link, "pod"), rules), undefined);
  assert.equal(pathProblem(join(await realpath(real), "pod"), rules), undefined);
  assert.match(pathProblem(join(dir, "other"), rules) ?? "", /allowed root/);
});
