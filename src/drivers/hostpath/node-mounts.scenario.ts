// Node-service scenarios with real bind mounts and loop devices. Not run directly by the test
// glob: node.test.ts starts this file with `unshare -m --propagation private node --test`, so
// every mount lives in a private mount namespace and vanishes with it even if a test dies.
// Loop devices are not namespaced: they are detached in after hooks here and, as a second
// net, by node.test.ts. HOSTPATH_TEST_DIR is the scratch dir the parent created.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, open, readFile, readdir, rename, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GrpcStatus } from "../../csi/index.ts";
import { nodeFileName } from "./ids.ts";
import { readMountInfo } from "./mountinfo.ts";
import { BLOCK_RW, MIB, MOUNT_RW, rejectsWith, startTestDriver, type TestDriver } from "./test-helpers.ts";
import { detachLoops, loopDevicesOf, run, unmount } from "./system.ts";

const scratch = process.env.HOSTPATH_TEST_DIR ?? "";
if (scratch === "") throw new Error("HOSTPATH_TEST_DIR must be set (run through node.test.ts)");

/** Unmounts every mount under `dir`, deepest first. */
async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readMountInfo()).filter((m) => m.mountPoint.startsWith(dir + "/"));
  for (const mount of mounts.reverse()) await unmount(mount.mountPoint).catch(() => undefined);
}

async function mountsUnder(dir: string): Promise<string[]> {
  return (await readMountInfo()).filter((m) => m.mountPoint.startsWith(dir + "/")).map((m) => m.mountPoint);
}

after(() => unmountUnder(scratch));

test("filesystem volume: stage, publish rw and ro, stats, idempotency, teardown", async (t) => {
  const driver = await startTestDriver(t);
  t.after(() => unmountUnder(driver.dir));
  const { client } = driver;
  const volumeId = (await client.controller.createVolume({ name: "fs", volumeCapabilities: [MOUNT_RW] }))
    .volume!.volumeId;
  const staging = join(driver.dir, "staging");
  const rw = join(driver.dir, "pod-rw");
  const ro = join(driver.dir, "pod-ro");
  await mkdir(staging);
  await rejectsWith(
    client.node.nodePublishVolume({
      volumeId,
      stagingTargetPath: staging,
      targetPath: rw,
      volumeCapability: MOUNT_RW,
    }),
    GrpcStatus.FAILED_PRECONDITION,
  );
  const stage = { volumeId, stagingTargetPath: staging, volumeCapability: MOUNT_RW };
  await client.node.nodeStageVolume(stage);
  await client.node.nodeStageVolume(stage);
  // Two target paths on one node: a mode that allows it (access-modes.scenario.ts has the rest).
  const publish = {
    volumeId,
    stagingTargetPath: staging,
    volumeCapability: { ...MOUNT_RW, accessMode: { mode: "SINGLE_NODE_MULTI_WRITER" as const } },
  };
  await client.node.nodePublishVolume({ ...publish, targetPath: rw });
  await client.node.nodePublishVolume({ ...publish, targetPath: rw });
  await client.node.nodePublishVolume({ ...publish, targetPath: ro, readonly: true });
  await rejectsWith(
    client.node.nodePublishVolume({ ...publish, targetPath: rw, readonly: true }),
    GrpcStatus.ALREADY_EXISTS,
  );

  await writeFile(join(rw, "data.txt"), "through the pod mount");
  assert.equal(
    await readFile(join(driver.stateDir, "volumes", volumeId, "data.txt"), "utf8"),
    "through the pod mount",
  );
  assert.equal(await readFile(join(ro, "data.txt"), "utf8"), "through the pod mount");
  await assert.rejects(writeFile(join(ro, "nope.txt"), "x"), { code: "EROFS" });

  const stats = await client.node.nodeGetVolumeStats({ volumeId, volumePath: rw });
  const bytes = stats.usage.find((u) => u.unit === "BYTES");
  assert.ok(bytes && BigInt(bytes.total) > 0n);
  assert.ok(stats.usage.some((u) => u.unit === "INODES"));
  assert.equal(stats.volumeCondition?.abnormal, false);
  await rejectsWith(
    client.node.nodeGetVolumeStats({ volumeId, volumePath: join(driver.dir, "missing") }),
    GrpcStatus.NOT_FOUND,
  );
  // An existing directory that does not show this volume: NOT_FOUND, not its own numbers.
  const unrelated = join(driver.dir, "unrelated");
  await mkdir(unrelated);
  const notHere = await rejectsWith(
    client.node.nodeGetVolumeStats({ volumeId, volumePath: unrelated }),
    GrpcStatus.NOT_FOUND,
  );
  assert.match(notHere, /is not mounted at volume_path .*unrelated/);
  await rejectsWith(client.node.nodeExpandVolume({ volumeId, volumePath: unrelated }), GrpcStatus.NOT_FOUND);
  assert.equal((await client.node.nodeGetVolumeStats({ volumeId, volumePath: staging })).usage.length, 2);
  await client.node.nodeExpandVolume({ volumeId, volumePath: rw });
  await client.node.nodeExpandVolume({ volumeId, volumePath: unrelated, stagingTargetPath: staging });

  // The health path (VOLUME_CONDITION, upstream hostpath's check that the backing directory
  // exists): with the data moved away the published volume is reported abnormal, node and
  // controller side; moved back, healthy again.
  const data = join(driver.stateDir, "volumes", volumeId);
  await rename(data, `${data}.away`);
  const gone = await client.node.nodeGetVolumeStats({ volumeId, volumePath: rw });
  assert.deepEqual(gone.volumeCondition, {
    abnormal: true,
    message: "The source path of the volume doesn't exist",
  });
  const controllerSide = await client.controller.controllerGetVolume({ volumeId });
  assert.equal(controllerSide.status?.volumeCondition?.abnormal, true);
  await rename(`${data}.away`, data);
  assert.equal(
    (await client.node.nodeGetVolumeStats({ volumeId, volumePath: rw })).volumeCondition?.abnormal,
    false,
  );

  for (const target of [rw, ro]) {
    await client.node.nodeUnpublishVolume({ volumeId, targetPath: target });
    await client.node.nodeUnpublishVolume({ volumeId, targetPath: target });
    await assert.rejects(stat(target), { code: "ENOENT" });
  }
  await client.node.nodeUnstageVolume({ volumeId, stagingTargetPath: staging });
  await client.node.nodeUnstageVolume({ volumeId, stagingTargetPath: staging });
  assert.deepEqual(await mountsUnder(driver.dir), []);
  // The data outlives the mounts.
  assert.deepEqual(await readdir(join(driver.stateDir, "volumes", volumeId)), ["data.txt"]);
});

test("block volume: loop device staged, bind-mounted as a device file, expanded, detached", async (t) => {
  const driver = await startTestDriver(t);
  const backing = (id: string): string => join(driver.stateDir, "volumes", `${id}.img`);
  let volumeId = "";
  t.after(async () => {
    await unmountUnder(driver.dir);
    if (volumeId) await detachLoops(backing(volumeId)).catch(() => undefined);
  });
  const { client } = driver;
  volumeId = (
    await client.controller.createVolume({
      name: "blk",
      volumeCapabilities: [BLOCK_RW],
      capacityRange: { requiredBytes: 4 * MIB },
    })
  ).volume!.volumeId;
  const staging = join(driver.dir, "staging");
  const target = join(driver.dir, "device");
  await mkdir(staging);
  await rejectsWith(
    client.node.nodeStageVolume({ volumeId, stagingTargetPath: staging, volumeCapability: MOUNT_RW }),
    GrpcStatus.FAILED_PRECONDITION,
  );
  await client.node.nodeStageVolume({ volumeId, stagingTargetPath: staging, volumeCapability: BLOCK_RW });
  await client.node.nodeStageVolume({ volumeId, stagingTargetPath: staging, volumeCapability: BLOCK_RW });
  const devices = await loopDevicesOf(backing(volumeId));
  assert.equal(devices.length, 1);
  const publish = { volumeId, stagingTargetPath: staging, targetPath: target, volumeCapability: BLOCK_RW };
  await client.node.nodePublishVolume(publish);
  await client.node.nodePublishVolume(publish);

  const handle = await open(target, "r+");
  await handle.write(Buffer.from("raw block bytes"), 0, 15, 0);
  await handle.sync();
  await handle.close();
  const contents = await readFile(backing(volumeId));
  assert.equal(contents.subarray(0, 15).toString(), "raw block bytes");

  const sectors = async (): Promise<number> =>
    Number(await readFile(`/sys/block/${devices[0]!.slice(5)}/size`, "utf8"));
  assert.equal(await sectors(), (4 * MIB) / 512);
  await client.controller.controllerExpandVolume({ volumeId, capacityRange: { requiredBytes: 8 * MIB } });
  const expanded = await client.node.nodeExpandVolume({
    volumeId,
    volumePath: target,
    capacityRange: { requiredBytes: 8 * MIB },
  });
  assert.equal(expanded.capacityBytes, String(8 * MIB));
  assert.equal(await sectors(), (8 * MIB) / 512);
  const stats = await client.node.nodeGetVolumeStats({ volumeId, volumePath: target });
  assert.equal(stats.usage[0]?.total, String(8 * MIB));
  const unrelated = join(driver.dir, "unrelated-file");
  await writeFile(unrelated, "");
  await rejectsWith(
    client.node.nodeGetVolumeStats({ volumeId, volumePath: unrelated }),
    GrpcStatus.NOT_FOUND,
  );
  await rejectsWith(client.node.nodeExpandVolume({ volumeId, volumePath: unrelated }), GrpcStatus.NOT_FOUND);
  assert.equal(
    (await client.node.nodeGetVolumeStats({ volumeId, volumePath: staging })).usage[0]?.total,
    String(8 * MIB),
  );

  await client.node.nodeUnpublishVolume({ volumeId, targetPath: target });
  await assert.rejects(stat(target), { code: "ENOENT" });
  await client.node.nodeUnstageVolume({ volumeId, stagingTargetPath: staging });
  await client.node.nodeUnstageVolume({ volumeId, stagingTargetPath: staging });
  assert.deepEqual(await loopDevicesOf(backing(volumeId)), []);
  assert.deepEqual(await mountsUnder(driver.dir), []);
});

test("inline ephemeral volume: created on publish, removed on unpublish", async (t) => {
  const driver = await startTestDriver(t);
  t.after(() => unmountUnder(driver.dir));
  const { client } = driver;
  const target = join(driver.dir, "ephemeral-mount");
  const request = {
    volumeId: "csi-0123abcd",
    targetPath: target,
    volumeCapability: MOUNT_RW,
    volumeContext: { "csi.storage.k8s.io/ephemeral": "true" },
  };
  await client.node.nodePublishVolume(request);
  await client.node.nodePublishVolume(request);
  await writeFile(join(target, "scratch"), "x");
  const ephemeralDir = join(driver.stateDir, "ephemeral");
  assert.equal((await readdir(ephemeralDir)).length, 1);
  await client.node.nodeUnpublishVolume({ volumeId: request.volumeId, targetPath: target });
  await assert.rejects(stat(target), { code: "ENOENT" });
  assert.deepEqual(await readdir(ephemeralDir), []);
  await rejectsWith(
    client.node.nodeUnpublishVolume({ volumeId: request.volumeId, targetPath: target }),
    GrpcStatus.NOT_FOUND,
  );
});

test("hostile paths and unknown volumes are refused before anything is touched", async (t) => {
  const driver = await startTestDriver(t);
  const { client } = driver;
  const volumeId = (await client.controller.createVolume({ name: "v", volumeCapabilities: [MOUNT_RW] }))
    .volume!.volumeId;
  for (const path of [
    "relative",
    join(driver.stateDir, "volumes"),
    `${driver.dir}/../etc`,
    `${driver.dir}/a/./b`,
    "/opt",
    driver.dir, // the allowed root itself
  ])
    await rejectsWith(
      client.node.nodeStageVolume({ volumeId, stagingTargetPath: path, volumeCapability: MOUNT_RW }),
      GrpcStatus.INVALID_ARGUMENT,
    );
  const outside = await rejectsWith(
    client.node.nodePublishVolume({
      volumeId,
      stagingTargetPath: join(driver.dir, "s"),
      targetPath: "/opt/pod",
      volumeCapability: MOUNT_RW,
    }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  assert.match(outside, /target_path "\/opt\/pod" is not strictly inside an allowed root/);
  assert.ok(outside.includes(`--allowed-path-roots: ${driver.dir}`), outside);
  // Asked about a path outside the roots, stats answer as the spec's table does (the volume is
  // not there: NOT_FOUND), still without looking at the path.
  assert.match(
    await rejectsWith(client.node.nodeGetVolumeStats({ volumeId, volumePath: "/usr" }), GrpcStatus.NOT_FOUND),
    /is not at volume_path "\/usr": no volume can be, the path is not strictly inside an allowed root/,
  );
  await rejectsWith(
    client.node.nodeStageVolume({
      volumeId: "vol-00000000000000000000000000000000",
      stagingTargetPath: join(driver.dir, "s"),
      volumeCapability: MOUNT_RW,
    }),
    GrpcStatus.NOT_FOUND,
  );
  await rejectsWith(
    client.node.nodeStageVolume({
      volumeId: "../../../etc",
      stagingTargetPath: join(driver.dir, "s"),
      volumeCapability: MOUNT_RW,
    }),
    GrpcStatus.NOT_FOUND,
  );
  assert.deepEqual(await mountsUnder(driver.dir), []);
});

test("unpublish leaves a foreign mount at the target alone and never removes a non-empty target", async (t) => {
  const driver = await startTestDriver(t);
  // Unmounted here, not in an after hook: the helper's hook removes the dir first.
  try {
    await foreignMountScenario(driver);
  } finally {
    await unmountUnder(driver.dir);
  }
});

async function foreignMountScenario(driver: TestDriver): Promise<void> {
  const { client } = driver;
  const create = async (name: string): Promise<string> =>
    (await client.controller.createVolume({ name, volumeCapabilities: [MOUNT_RW] })).volume!.volumeId;
  const mine = await create("mine");
  const theirs = await create("theirs");
  const staging = join(driver.dir, "staging");
  await mkdir(staging);
  await client.node.nodeStageVolume({
    volumeId: theirs,
    stagingTargetPath: staging,
    volumeCapability: MOUNT_RW,
  });

  // A tmpfs someone else mounted where the CO says volume "mine" is published.
  const tmpfsTarget = join(driver.dir, "tmpfs-target");
  await mkdir(tmpfsTarget);
  await run("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", tmpfsTarget]);
  await writeFile(join(tmpfsTarget, "keep"), "x");
  const message = await rejectsWith(
    client.node.nodeUnpublishVolume({ volumeId: mine, targetPath: tmpfsTarget }),
    GrpcStatus.FAILED_PRECONDITION,
  );
  assert.match(message, /target_path .*tmpfs-target holds a mount of other data .*not touching it/);
  assert.deepEqual(await mountsUnder(driver.dir), [staging, tmpfsTarget]);
  assert.equal(await readFile(join(tmpfsTarget, "keep"), "utf8"), "x");

  // Another volume's publish at the target: unpublishing "mine" there must not unmount it.
  const published = join(driver.dir, "published");
  await client.node.nodePublishVolume({
    volumeId: theirs,
    stagingTargetPath: staging,
    targetPath: published,
    volumeCapability: MOUNT_RW,
  });
  await rejectsWith(
    client.node.nodeUnpublishVolume({ volumeId: mine, targetPath: published }),
    GrpcStatus.FAILED_PRECONDITION,
  );
  assert.ok((await mountsUnder(driver.dir)).includes(published));
  await client.node.nodeUnpublishVolume({ volumeId: theirs, targetPath: published });
  assert.ok(!(await mountsUnder(driver.dir)).includes(published));

  // Not a mount and not empty: answered OK (nothing published) but the content stays.
  const full = join(driver.dir, "full");
  await mkdir(full);
  await writeFile(join(full, "precious"), "y");
  await client.node.nodeUnpublishVolume({ volumeId: mine, targetPath: full });
  assert.equal(await readFile(join(full, "precious"), "utf8"), "y");
  await client.node.nodeUnstageVolume({ volumeId: theirs, stagingTargetPath: staging });
}

test("--ephemeral: a publish without the ephemeral key is an inline ephemeral volume", async (t) => {
  const driver = await startTestDriver(t, { ephemeral: true });
  try {
    const { client } = driver;
    const target = join(driver.dir, "inline");
    // No csi.storage.k8s.io/ephemeral key and no staging path: treated as inline ephemeral.
    const request = { volumeId: "csi-feedbeef", targetPath: target, volumeCapability: MOUNT_RW };
    await client.node.nodePublishVolume(request);
    await client.node.nodePublishVolume(request);
    await writeFile(join(target, "scratch"), "x");
    const ephemeralDir = join(driver.stateDir, "ephemeral");
    const [dirName] = await readdir(ephemeralDir);
    assert.equal(await readFile(join(ephemeralDir, dirName!, "scratch"), "utf8"), "x");
    // An explicit "false" is a normal publish, which needs a staged volume.
    await rejectsWith(
      client.node.nodePublishVolume({
        ...request,
        volumeId: "csi-other",
        targetPath: join(driver.dir, "explicit-false"),
        volumeContext: { "csi.storage.k8s.io/ephemeral": "false" },
      }),
      GrpcStatus.FAILED_PRECONDITION,
    );
    await client.node.nodeUnpublishVolume({ volumeId: request.volumeId, targetPath: target });
    await assert.rejects(stat(target), { code: "ENOENT" });
    assert.deepEqual(await readdir(ephemeralDir), []);
  } finally {
    await unmountUnder(driver.dir);
  }
});

test("without --ephemeral a publish without the ephemeral key is a normal publish", async (t) => {
  const driver = await startTestDriver(t);
  const message = await rejectsWith(
    driver.client.node.nodePublishVolume({
      volumeId: "csi-feedbeef",
      targetPath: join(driver.dir, "inline"),
      volumeCapability: MOUNT_RW,
    }),
    GrpcStatus.FAILED_PRECONDITION,
  );
  assert.match(message, /staging_target_path is required/);
  assert.deepEqual(await mountsUnder(driver.dir), []);
});

test("crash during block NodeStage (loop attached, not bind-mounted): retry stages, unstage detaches all", async (t) => {
  const driver = await startTestDriver(t);
  const { client } = driver;
  const create = async (name: string): Promise<string> =>
    (
      await client.controller.createVolume({
        name,
        volumeCapabilities: [BLOCK_RW],
        capacityRange: { requiredBytes: MIB },
      })
    ).volume!.volumeId;
  const retried = await create("retried");
  const abandoned = await create("abandoned");
  const backing = (id: string): string => join(driver.stateDir, "volumes", `${id}.img`);
  t.after(async () => {
    await unmountUnder(driver.dir);
    for (const id of [retried, abandoned]) await detachLoops(backing(id)).catch(() => undefined);
  });
  const staging = (id: string): string => join(driver.dir, `staging-${id}`);
  for (const id of [retried, abandoned]) {
    await mkdir(staging(id));
    // What a kill -9 between `losetup` and the bind mount leaves: an attached loop device and
    // the empty file the device was to be bound onto.
    await run("losetup", ["--find", "--show", "--", backing(id)]);
    await writeFile(join(staging(id), id), "");
  }
  const handAttached = await loopDevicesOf(backing(retried));
  assert.equal(handAttached.length, 1);

  const stage = { volumeId: retried, stagingTargetPath: staging(retried), volumeCapability: BLOCK_RW };
  await client.node.nodeStageVolume(stage);
  assert.deepEqual(await loopDevicesOf(backing(retried)), handAttached, "the attached device is reused");
  assert.deepEqual(await mountsUnder(driver.dir), [join(staging(retried), retried)]);
  await client.node.nodeUnstageVolume({ volumeId: retried, stagingTargetPath: staging(retried) });
  assert.deepEqual(await loopDevicesOf(backing(retried)), []);
  assert.deepEqual(await readdir(staging(retried)), []);

  // The CO may give up instead of retrying the stage: unstage alone cleans up too.
  await client.node.nodeUnstageVolume({ volumeId: abandoned, stagingTargetPath: staging(abandoned) });
  assert.deepEqual(await loopDevicesOf(backing(abandoned)), []);
  assert.deepEqual(await readdir(staging(abandoned)), []);
  assert.deepEqual(await mountsUnder(driver.dir), []);
});

test("crash during inline ephemeral create and delete: retry finishes the create; start finishes the delete", async (t) => {
  const driver = await startTestDriver(t);
  try {
    const { client } = driver;
    const target = join(driver.dir, "inline");
    const request = {
      volumeId: "csi-crashy",
      targetPath: target,
      volumeCapability: MOUNT_RW,
      volumeContext: { "csi.storage.k8s.io/ephemeral": "true" },
    };
    await client.node.nodePublishVolume(request);
    const stateFile = join(driver.stateDir, `node-${nodeFileName("node-1")}.json`);
    const ephemeralDir = join(driver.stateDir, "ephemeral");
    const [dirName] = await readdir(ephemeralDir);
    const editState = async (phase: string): Promise<void> => {
      const state = JSON.parse(await readFile(stateFile, "utf8")) as {
        ephemeral: Record<string, { phase: string }>;
      };
      state.ephemeral[request.volumeId]!.phase = phase;
      await writeFile(stateFile, JSON.stringify(state));
    };

    // Killed after recording the intent and creating the directory, before the bind mount.
    await driver.server.close();
    await unmount(target);
    await editState("creating");
    await driver.restart();
    assert.deepEqual(await mountsUnder(driver.dir), []);
    await client.node.nodePublishVolume(request);
    assert.deepEqual(await mountsUnder(driver.dir), [target]);
    await writeFile(join(target, "scratch"), "x");
    assert.equal(await readFile(join(ephemeralDir, dirName!, "scratch"), "utf8"), "x");

    // Killed after recording the delete intent, with the mount and data still there.
    await driver.server.close();
    await editState("deleting");
    await driver.restart();
    assert.deepEqual(await mountsUnder(driver.dir), []);
    await assert.rejects(stat(target), { code: "ENOENT" });
    assert.deepEqual(await readdir(ephemeralDir), []);
    const state = JSON.parse(await readFile(stateFile, "utf8")) as { ephemeral: Record<string, unknown> };
    assert.deepEqual(state.ephemeral, {});
  } finally {
    await unmountUnder(driver.dir);
  }
});

/** Everything that exists under `dir` (recursively), as relative paths. */
async function entriesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true }).catch(() => [])).sort();
}

test("traversal corpus: no file, directory or mount appears outside the allowed roots", async (t) => {
  const driver = await startTestDriver(t);
  t.after(() => unmountUnder(driver.dir));
  const { client, dir: root } = driver;
  const outside = join(scratch, "outside");
  await mkdir(outside, { recursive: true });
  const volumeId = (await client.controller.createVolume({ name: "walk", volumeCapabilities: [MOUNT_RW] }))
    .volume!.volumeId;
  const staging = join(root, "staging");
  await client.node.nodeStageVolume({ volumeId, stagingTargetPath: staging, volumeCapability: MOUNT_RW });
  await mkdir(join(root, "a"));
  await mkdir(join(root, "inside"));
  await symlink(outside, join(root, "abs")); // absolute symlink out
  await symlink(outside, join(root, "a", "deep")); // a symlink one level further down
  await symlink("../".repeat(12) + outside.slice(1), join(root, "rel")); // relative, climbing out
  await symlink(outside, join(root, "final")); // a symlink as the final component
  await symlink(join(root, "inside"), join(root, "in-final")); // final symlink, even pointing inside
  const corpus = [
    join(root, "..", "outside-x"),
    `${root}/a/../../x`,
    join(root, "abs", "x"),
    join(root, "a", "deep", "x"),
    join(root, "rel", "x"),
    join(root, "final"),
    join(root, "in-final"),
    root,
  ];
  for (const target of corpus) {
    const publish = rejectsWith(
      client.node.nodePublishVolume({
        volumeId,
        stagingTargetPath: staging,
        targetPath: target,
        volumeCapability: MOUNT_RW,
      }),
      GrpcStatus.INVALID_ARGUMENT,
    );
    assert.match(await publish, new RegExp(`target_path "${target.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`));
    // Staging under the same path: refused wherever the parent leads out (under the root
    // itself and under a link that stays inside, staging is legitimately inside).
    if (target === root || target.endsWith("in-final")) continue;
    const stage = join(target, "staging-x");
    await rejectsWith(
      client.node.nodeStageVolume({ volumeId, stagingTargetPath: stage, volumeCapability: MOUNT_RW }),
      GrpcStatus.INVALID_ARGUMENT,
    );
  }
  // A symlink inside the roots that stays inside is followed for the parent (its real path is
  // checked), and the mount lands at the real place.
  const viaLink = join(root, "in-final", "pod");
  await client.node.nodePublishVolume({
    volumeId,
    stagingTargetPath: staging,
    targetPath: viaLink,
    volumeCapability: MOUNT_RW,
  });
  assert.ok((await mountsUnder(root)).includes(join(root, "inside", "pod")));
  await client.node.nodeUnpublishVolume({ volumeId, targetPath: viaLink });
  assert.deepEqual(await entriesUnder(outside), [], "nothing was created outside the roots");
  assert.deepEqual(await mountsUnder(outside), [], "nothing was mounted outside the roots");

  // A parent swapped for a symlink out between the check and the mount, many times: the call
  // may succeed (inside, where the held directory now lives) or fail, never act outside.
  for (let i = 0; i < 40; i++) {
    const parent = join(root, `race-${i}`);
    await mkdir(parent);
    const target = join(parent, "pod");
    const call = client.node
      .nodePublishVolume({
        volumeId,
        stagingTargetPath: staging,
        targetPath: target,
        volumeCapability: MOUNT_RW,
      })
      .then(
        () => "ok",
        (error: unknown) => String(error),
      );
    const swapped = join(root, `swap-${i}`);
    await symlink(outside, swapped);
    await rename(parent, join(root, `moved-${i}`));
    await rename(swapped, parent);
    await call;
    assert.deepEqual(await entriesUnder(outside), [], `round ${i}: nothing created outside`);
    assert.deepEqual(await mountsUnder(outside), [], `round ${i}: nothing mounted outside`);
  }
  await unmountUnder(root);
});
