// NodePublishVolume under each CSI access mode, with real bind mounts and real gRPC over the
// driver's Unix socket (access-modes.ts has the rules). Run by node.test.ts inside a private
// mount namespace, like node-mounts.scenario.ts; HOSTPATH_TEST_DIR is the parent's scratch dir.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GrpcStatus, type VolumeCapability_AccessMode_Mode } from "../../csi/index.ts";
import { readMountInfo } from "./mountinfo.ts";
import { detachLoops, unmount } from "./system.ts";
import { MIB, rejectsWith, startTestDriver, type TestDriver } from "./test-helpers.ts";

const scratch = process.env.HOSTPATH_TEST_DIR ?? "";
if (scratch === "") throw new Error("HOSTPATH_TEST_DIR must be set (run through node.test.ts)");

async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readMountInfo()).filter((m) => m.mountPoint.startsWith(dir + "/"));
  for (const mount of mounts.reverse()) await unmount(mount.mountPoint).catch(() => undefined);
}

async function mountOptions(path: string): Promise<string[] | undefined> {
  let found: string[] | undefined;
  for (const entry of await readMountInfo()) if (entry.mountPoint === path) found = entry.options;
  return found;
}

after(() => unmountUnder(scratch));

type Mode = VolumeCapability_AccessMode_Mode;

const mountCapability = (mode: Mode) => ({ mount: {}, accessMode: { mode } });
const blockCapability = (mode: Mode) => ({ block: {}, accessMode: { mode } });

interface Staged {
  driver: TestDriver;
  volumeId: string;
  /** NodePublishVolume at `target` (a name under the driver's dir) with the volume's capability. */
  publish(target: string, readonly?: boolean): Promise<unknown>;
  unpublish(target: string): Promise<unknown>;
  path(name: string): string;
}

interface AfterHook {
  after(fn: () => Promise<void>): void;
}

/**
 * A driver whose mounts and loop devices are undone after the test. The hook is registered
 * before the driver's own (which removes its dir), as after hooks run in order.
 */
async function driverWithCleanup(t: AfterHook): Promise<TestDriver> {
  const made: { driver?: TestDriver } = {};
  const backings: string[] = [];
  t.after(async () => {
    if (!made.driver) return;
    await unmountUnder(made.driver.dir);
    for (const file of backings) await detachLoops(file).catch(() => undefined);
  });
  const driver = await startTestDriver(t);
  made.driver = driver;
  cleanups.set(driver, (volumeId) => backings.push(join(driver.stateDir, "volumes", `${volumeId}.img`)));
  return driver;
}

/** Per driver: records a block volume's backing file for the loop cleanup. */
const cleanups = new WeakMap<TestDriver, (volumeId: string) => void>();

/** A volume created and staged with `capability` on `driver` (default: a fresh one). */
async function stagedVolume(
  t: AfterHook,
  capability: ReturnType<typeof mountCapability> | ReturnType<typeof blockCapability>,
  driver?: TestDriver,
): Promise<Staged> {
  const d = driver ?? (await driverWithCleanup(t));
  const { client } = d;
  const volumeId = (
    await client.controller.createVolume({
      name: `v-${Math.random().toString(16).slice(2)}`,
      volumeCapabilities: [capability],
      capacityRange: { requiredBytes: MIB },
    })
  ).volume!.volumeId;
  cleanups.get(d)?.(volumeId);
  const staging = join(d.dir, `staging-${volumeId}`);
  await mkdir(staging);
  await client.node.nodeStageVolume({ volumeId, stagingTargetPath: staging, volumeCapability: capability });
  const path = (name: string): string => join(d.dir, name);
  return {
    driver: d,
    volumeId,
    path,
    publish: (target, readonly = false) =>
      client.node.nodePublishVolume({
        volumeId,
        stagingTargetPath: staging,
        targetPath: path(target),
        volumeCapability: capability,
        readonly,
      }),
    unpublish: (target) => client.node.nodeUnpublishVolume({ volumeId, targetPath: path(target) }),
  };
}

/** A second target path is refused with FAILED_PRECONDITION, and nothing is left there. */
async function refusesSecondTarget(volume: Staged, second: string): Promise<string> {
  const message = await rejectsWith(volume.publish(second), GrpcStatus.FAILED_PRECONDITION);
  assert.equal(await mountOptions(volume.path(second)), undefined, "no mount at the refused target");
  await assert.rejects(stat(volume.path(second)), { code: "ENOENT" }, "the refused target is not created");
  return message;
}

for (const mode of ["SINGLE_NODE_SINGLE_WRITER", "SINGLE_NODE_WRITER"] as const) {
  test(`${mode}: one target path per node; the same one again is idempotent`, async (t) => {
    const volume = await stagedVolume(t, mountCapability(mode));
    await volume.publish("pod-a");
    // The kubelet publishes the same volume at the same target again on every sync.
    await volume.publish("pod-a");
    const message = await refusesSecondTarget(volume, "pod-b");
    assert.match(message, new RegExp(`access mode ${mode}.*already published at .*pod-a`));
    // Not even read-only: the spec's table refuses any other target path.
    await rejectsWith(volume.publish("pod-b", true), GrpcStatus.FAILED_PRECONDITION);
    // The same target with another readonly flag stays ALREADY_EXISTS (the idempotency rule).
    await rejectsWith(volume.publish("pod-a", true), GrpcStatus.ALREADY_EXISTS);
    // Once unpublished there, another target may have it.
    await volume.unpublish("pod-a");
    await volume.publish("pod-b");
    await writeFile(join(volume.path("pod-b"), "data"), "written by the one writer");
  });
}

test("SINGLE_NODE_SINGLE_WRITER is enforced from the mount table, so also after a driver restart", async (t) => {
  const volume = await stagedVolume(t, mountCapability("SINGLE_NODE_SINGLE_WRITER"));
  await volume.publish("pod-a");
  await volume.driver.restart();
  await volume.publish("pod-a");
  await refusesSecondTarget(volume, "pod-b");
});

test("SINGLE_NODE_SINGLE_WRITER block volume: a second device file is refused", async (t) => {
  const volume = await stagedVolume(t, blockCapability("SINGLE_NODE_SINGLE_WRITER"));
  await volume.publish("dev-a");
  await volume.publish("dev-a");
  await refusesSecondTarget(volume, "dev-b");
  await volume.unpublish("dev-a");
  await volume.publish("dev-b");
});

test("SINGLE_NODE_READER_ONLY: mounted read-only whatever the flag says, at one target path", async (t) => {
  const volume = await stagedVolume(t, mountCapability("SINGLE_NODE_READER_ONLY"));
  await volume.publish("pod-a");
  assert.ok((await mountOptions(volume.path("pod-a")))?.includes("ro"), "mounted read-only");
  await assert.rejects(writeFile(join(volume.path("pod-a"), "x"), "x"), { code: "EROFS" });
  // readonly=true asks for what is already there: idempotent.
  await volume.publish("pod-a", true);
  await refusesSecondTarget(volume, "pod-b");
});

test("MULTI_NODE_READER_ONLY: several target paths, every one read-only", async (t) => {
  const volume = await stagedVolume(t, mountCapability("MULTI_NODE_READER_ONLY"));
  await volume.publish("pod-a");
  await volume.publish("pod-b", true);
  for (const target of ["pod-a", "pod-b"]) {
    assert.ok((await mountOptions(volume.path(target)))?.includes("ro"), `${target} mounted read-only`);
    await assert.rejects(writeFile(join(volume.path(target), "x"), "x"), { code: "EROFS" });
  }
});

for (const mode of [
  "SINGLE_NODE_MULTI_WRITER",
  "MULTI_NODE_SINGLE_WRITER",
  "MULTI_NODE_MULTI_WRITER",
] as const) {
  test(`${mode}: several target paths on one node, read-write as asked`, async (t) => {
    const volume = await stagedVolume(t, mountCapability(mode));
    await volume.publish("pod-a");
    await volume.publish("pod-b");
    await volume.publish("pod-c", true);
    await writeFile(join(volume.path("pod-a"), "data"), "shared");
    await writeFile(join(volume.path("pod-b"), "data"), "shared too");
    assert.ok((await mountOptions(volume.path("pod-c")))?.includes("ro"));
  });
}

test("another volume's single-writer publish does not count against this one", async (t) => {
  const driver = await driverWithCleanup(t);
  const one = await stagedVolume(t, mountCapability("SINGLE_NODE_SINGLE_WRITER"), driver);
  const other = await stagedVolume(t, mountCapability("SINGLE_NODE_SINGLE_WRITER"), driver);
  await one.publish("one");
  await other.publish("other");
});
