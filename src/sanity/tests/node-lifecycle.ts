// Whole volume lifecycles on the node, checked on disk: a mounted filesystem is a mount point
// that keeps data, a block volume is a device that reads back what was written, a read-only
// publish refuses writes; NodeGetVolumeStats and NodeExpandVolume on a published volume;
// snapshot restore and clone carry the data.

import { open, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { errorCode } from "../../base/index.ts";
import { GrpcStatus } from "../../csi/index.ts";
import type { PublishedVolume, TestContext } from "../context.ts";
import {
  SanityAssertion,
  callFailure,
  check,
  expectCode,
  expectOk,
  grpcCode,
  grpcDetails,
  int64,
} from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";
import type { Volume, VolumeCapability } from "../types.ts";

const { INVALID_ARGUMENT, NOT_FOUND } = GrpcStatus;

/** A created volume, so a case about one missing field has no unknown volume as a second fault. */
const VOLUMES = { requires: ["plugin:CONTROLLER_SERVICE", "controller:CREATE_DELETE_VOLUME"] } as const;

const LIFECYCLE = {
  requires: ["plugin:CONTROLLER_SERVICE", "controller:CREATE_DELETE_VOLUME"],
  mounts: true,
  inspectsNode: true,
} as const;

/** True when `path` is a mount point in this process's mount namespace. */
async function isMountPoint(path: string): Promise<boolean> {
  const table = await readFile("/proc/self/mountinfo", "utf8");
  // Field 5 is the mount point, with spaces etc. octal-escaped.
  const escaped = path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);
  return table.split("\n").some((line) => line.split(" ")[4] === escaped);
}

async function checkMounted(target: string): Promise<void> {
  const info = await stat(target);
  check(info.isDirectory(), `NodePublishVolume: target ${target} is not a directory`);
  check(await isMountPoint(target), `NodePublishVolume: target ${target} is not a mount point`);
}

const MARKER = "written by csikit sanity\n";

async function writeMarker(dir: string): Promise<void> {
  await writeFile(join(dir, "sanity-marker"), MARKER);
}

async function checkMarker(dir: string, what: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(join(dir, "sanity-marker"), "utf8");
  } catch (error) {
    throw new SanityAssertion(`${what}: the file written before is gone (${errorCode(error) ?? "error"})`);
  }
  check(text === MARKER, `${what}: the file written before has other content`);
}

/** Publishes `volume` (already created) through all CO steps and returns where it landed. */
async function publishExisting(
  t: TestContext,
  volume: Volume,
  capability: VolumeCapability = t.mountCapability(),
  readonly = false,
): Promise<PublishedVolume> {
  const publishContext = await t.controllerPublish(volume.volumeId, capability, readonly);
  const stagingPath = await t.stage(volume, capability, publishContext);
  const targetPath = await t.publish(volume, capability, { stagingPath, publishContext, readonly });
  return { volume, capability, publishContext, stagingPath, targetPath };
}

/** Creates and publishes a block volume; skips when the driver refuses block volumes. */
async function setupBlock(t: TestContext): Promise<PublishedVolume> {
  const capability = t.blockCapability();
  const request = t.volumeRequest({ volumeCapabilities: [capability] });
  let volume: Volume | null;
  try {
    volume = (await t.controller.createVolume(request)).volume;
  } catch (error) {
    if (grpcCode(error) === INVALID_ARGUMENT)
      t.skip(`the driver does not offer block volumes: ${grpcDetails(error)}`);
    throw callFailure("CreateVolume (block)", error);
  }
  check(volume?.volumeId, "CreateVolume (block): no volume id");
  t.resources.volume(volume.volumeId);
  return publishExisting(t, volume, capability);
}

/** Tears down node and controller publication but keeps the volume. */
async function unpublishKeep(t: TestContext, published: PublishedVolume): Promise<void> {
  const { volume, targetPath, stagingPath } = published;
  await expectOk(
    t.node.nodeUnpublishVolume({ volumeId: volume.volumeId, targetPath }),
    "NodeUnpublishVolume",
  );
  t.resources.forget("nodePublish", volume.volumeId, targetPath);
  if (stagingPath !== undefined) {
    await expectOk(
      t.node.nodeUnstageVolume({ volumeId: volume.volumeId, stagingTargetPath: stagingPath }),
      "NodeUnstageVolume",
    );
    t.resources.forget("nodeStage", volume.volumeId, stagingPath);
  }
  if (t.has("controller:PUBLISH_UNPUBLISH_VOLUME")) {
    const nodeId = await t.nodeId();
    await expectOk(
      t.controller.controllerUnpublishVolume({
        volumeId: volume.volumeId,
        nodeId,
        secrets: t.secrets.ControllerUnpublishVolumeSecret ?? {},
      }),
      "ControllerUnpublishVolume",
    );
    t.resources.forget("controllerPublish", volume.volumeId, nodeId);
  }
}

function statsRequest(volumeId: string, volumePath: string, stagingTargetPath = "") {
  return { volumeId, volumePath, stagingTargetPath };
}

export function nodeLifecycleTests(): SanityTest[] {
  return [
    ...describe("Node", "Lifecycle", LIFECYCLE, ({ it }) => {
      it("mount volume: create, publish, stage, publish, write, read, and tear down", async (t) => {
        const setup = await t.setupVolume();
        await checkMounted(setup.targetPath);
        await writeMarker(setup.targetPath);
        await checkMarker(setup.targetPath, "mounted volume");
        await t.teardownVolume(setup);
        check(
          !(await stat(setup.targetPath).then(
            () => true,
            () => false,
          )),
          `target ${setup.targetPath} still exists after NodeUnpublishVolume`,
        );
      });
      it("block volume: the target is a block device that reads back what was written", async (t) => {
        const setup = await setupBlock(t);
        const info = await stat(setup.targetPath);
        check(
          info.isBlockDevice(),
          `NodePublishVolume (block): target ${setup.targetPath} is not a block device`,
        );
        const data = Buffer.alloc(4096, 0x5a);
        const device = await open(setup.targetPath, "r+");
        try {
          await device.write(data, 0, data.length, 0);
          await device.sync();
          const back = Buffer.alloc(data.length);
          await device.read(back, 0, back.length, 0);
          check(back.equals(data), "block volume: the bytes read back differ from the bytes written");
        } finally {
          await device.close();
        }
        await t.teardownVolume(setup);
      });
      it("read-only publish refuses writes", async (t) => {
        const capability = t.mountCapability();
        const volume = await t.createVolume({ volumeCapabilities: [capability] });
        const canReadOnly =
          t.has("controller:PUBLISH_READONLY") || !t.has("controller:PUBLISH_UNPUBLISH_VOLUME");
        const publishContext = await t.controllerPublish(volume.volumeId, capability, canReadOnly);
        const stagingPath = await t.stage(volume, capability, publishContext);
        const target = await t.publish(volume, capability, { stagingPath, publishContext, readonly: true });
        await checkMounted(target);
        try {
          await writeMarker(target);
        } catch (error) {
          check(
            errorCode(error) === "EROFS" || errorCode(error) === "EACCES",
            `read-only target: write failed with ${errorCode(error)}, want EROFS`,
          );
          return;
        }
        throw new SanityAssertion(`read-only target ${target}: a write succeeded`);
      });
      it("data survives unpublish and publish again", async (t) => {
        const volume = await t.createVolume();
        const first = await publishExisting(t, volume);
        await writeMarker(first.targetPath);
        await unpublishKeep(t, first);
        const second = await publishExisting(t, volume);
        await checkMarker(second.targetPath, "volume published again");
      });
      it(
        "a volume restored from a snapshot holds the source's data",
        { requires: ["controller:CREATE_DELETE_SNAPSHOT"] },
        async (t) => {
          const source = await t.createVolume();
          const published = await publishExisting(t, source);
          await writeMarker(published.targetPath);
          await unpublishKeep(t, published);
          const snapshot = await t.createSnapshot(source.volumeId);
          const restored = await t.createVolume({
            volumeContentSource: { snapshot: { snapshotId: snapshot.snapshotId } },
          });
          await checkMarker(
            (await publishExisting(t, restored)).targetPath,
            "volume restored from a snapshot",
          );
        },
      );
      it("a clone holds the source's data", { requires: ["controller:CLONE_VOLUME"] }, async (t) => {
        const source = await t.createVolume();
        const published = await publishExisting(t, source);
        await writeMarker(published.targetPath);
        await unpublishKeep(t, published);
        const clone = await t.createVolume({
          volumeContentSource: { volume: { volumeId: source.volumeId } },
        });
        await checkMarker((await publishExisting(t, clone)).targetPath, "cloned volume");
      });
    }),

    ...describe("Node", "NodeGetVolumeStats", { requires: ["node:GET_VOLUME_STATS"] }, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          t.node.nodeGetVolumeStats(statsRequest("", t.settings.targetDir)),
          INVALID_ARGUMENT,
          "NodeGetVolumeStats without volume_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the volume path is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.node.nodeGetVolumeStats(statsRequest(volume.volumeId, "")),
          INVALID_ARGUMENT,
          "NodeGetVolumeStats without volume_path",
        );
      });
      it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
        await expectCode(
          t.node.nodeGetVolumeStats(statsRequest("sanity-no-such-volume", await t.makeExistingTargetPath())),
          NOT_FOUND,
          "NodeGetVolumeStats of an unknown volume",
        );
      });
      it('fails with NOT_FOUND for an unknown volume at volume_path "some/path" (as csi-sanity asks)', async (t) => {
        await expectCode(
          t.node.nodeGetVolumeStats(statsRequest("sanity-no-such-volume", "some/path")),
          NOT_FOUND,
          'NodeGetVolumeStats of an unknown volume at "some/path"',
        );
      });
      it("fails with NOT_FOUND for a path the volume is not published at", LIFECYCLE, async (t) => {
        const setup = await t.setupVolume();
        await expectCode(
          t.node.nodeGetVolumeStats(
            statsRequest(setup.volume.volumeId, await t.makeExistingTargetPath(), setup.stagingPath),
          ),
          NOT_FOUND,
          "NodeGetVolumeStats at an existing directory the volume is not published at",
        );
      });
      it("reports byte usage with total > 0 and used + available within total", LIFECYCLE, async (t) => {
        const setup = await t.setupVolume();
        const response = await expectOk(
          t.node.nodeGetVolumeStats(statsRequest(setup.volume.volumeId, setup.targetPath, setup.stagingPath)),
          "NodeGetVolumeStats",
        );
        const bytes = response.usage.find((u) => u.unit === "BYTES");
        check(bytes, "NodeGetVolumeStats: no BYTES usage");
        const total = int64(bytes.total);
        check(total > 0n, `NodeGetVolumeStats: BYTES total ${bytes.total}`);
        check(
          int64(bytes.available) >= 0n && int64(bytes.used) >= 0n,
          "NodeGetVolumeStats: negative BYTES used or available",
        );
        check(
          int64(bytes.used) <= total,
          `NodeGetVolumeStats: BYTES used ${bytes.used} > total ${bytes.total} (used must be within total)`,
        );
        check(
          int64(bytes.available) <= total,
          `NodeGetVolumeStats: available ${bytes.available} > total ${bytes.total}`,
        );
        check(
          int64(bytes.used) + int64(bytes.available) <= total,
          `NodeGetVolumeStats: BYTES used ${bytes.used} + available ${bytes.available} > total ${bytes.total}`,
        );
        for (const usage of response.usage)
          check(usage.unit !== "UNKNOWN", "NodeGetVolumeStats: usage with unit UNKNOWN");
        // Present with the capability, as the spec says; which condition is the driver's to say.
        if (t.has("node:VOLUME_CONDITION"))
          check(
            response.volumeCondition,
            "NodeGetVolumeStats: no volume_condition (VOLUME_CONDITION capability)",
          );
      });
      it("reports a total size for a block volume", LIFECYCLE, async (t) => {
        const setup = await setupBlock(t);
        const response = await expectOk(
          t.node.nodeGetVolumeStats(statsRequest(setup.volume.volumeId, setup.targetPath, setup.stagingPath)),
          "NodeGetVolumeStats (block)",
        );
        const bytes = response.usage.find((u) => u.unit === "BYTES");
        check(bytes && int64(bytes.total) > 0n, "NodeGetVolumeStats (block): no BYTES total");
      });
    }),

    ...describe("Node", "NodeExpandVolume", { requires: ["node:EXPAND_VOLUME"] }, ({ it }) => {
      const expand = (t: TestContext, volumeId: string, volumePath: string, stagingTargetPath = "") =>
        t.node.nodeExpandVolume({
          volumeId,
          volumePath,
          stagingTargetPath,
          capacityRange: { requiredBytes: String(t.settings.testVolumeExpandSize) },
          volumeCapability: t.mountCapability(),
          secrets: t.secrets.NodeExpandVolumeSecret ?? {},
        });
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          expand(t, "", t.settings.targetDir),
          INVALID_ARGUMENT,
          "NodeExpandVolume without volume_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the volume path is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          expand(t, volume.volumeId, ""),
          INVALID_ARGUMENT,
          "NodeExpandVolume without volume_path",
        );
      });
      it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
        await expectCode(
          expand(t, "sanity-no-such-volume", await t.makeExistingTargetPath()),
          NOT_FOUND,
          "NodeExpandVolume of an unknown volume",
        );
      });
      it('fails with NOT_FOUND for an unknown volume at volume_path "some/path" (as csi-sanity asks)', async (t) => {
        await expectCode(
          expand(t, "sanity-no-such-volume", "some/path"),
          NOT_FOUND,
          'NodeExpandVolume of an unknown volume at "some/path"',
        );
      });
      it(
        "expands a volume on the node that was expanded in the controller before publishing",
        { ...LIFECYCLE, requires: [...LIFECYCLE.requires, "controller:EXPAND_VOLUME"] },
        async (t) => {
          const volume = await t.createVolume();
          const expanded = await expectOk(
            t.controller.controllerExpandVolume({
              volumeId: volume.volumeId,
              capacityRange: { requiredBytes: String(t.settings.testVolumeExpandSize) },
              volumeCapability: t.mountCapability(),
              secrets: t.secrets.ControllerExpandVolumeSecret ?? {},
            }),
            "ControllerExpandVolume before publishing",
          );
          const published = await publishExisting(t, volume);
          if (!expanded.nodeExpansionRequired) return;
          await expectOk(
            expand(t, volume.volumeId, published.targetPath, published.stagingPath),
            "NodeExpandVolume after an offline ControllerExpandVolume",
          );
        },
      );
      it(
        "expands a published volume after ControllerExpandVolume",
        { ...LIFECYCLE, requires: [...LIFECYCLE.requires, "controller:EXPAND_VOLUME", "plugin:ONLINE"] },
        async (t) => {
          const setup = await t.setupVolume();
          await expectOk(
            t.controller.controllerExpandVolume({
              volumeId: setup.volume.volumeId,
              capacityRange: { requiredBytes: String(t.settings.testVolumeExpandSize) },
              volumeCapability: setup.capability,
              secrets: t.secrets.ControllerExpandVolumeSecret ?? {},
            }),
            "ControllerExpandVolume",
          );
          const response = await expectOk(
            expand(t, setup.volume.volumeId, setup.targetPath, setup.stagingPath),
            "NodeExpandVolume",
          );
          const capacity = int64(response.capacityBytes);
          check(
            capacity === 0n || capacity >= BigInt(t.settings.testVolumeExpandSize),
            `NodeExpandVolume: capacity_bytes ${capacity} < requested ${t.settings.testVolumeExpandSize}`,
          );
        },
      );
    }),
  ];
}
