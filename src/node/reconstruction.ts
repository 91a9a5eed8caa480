// Reconstruction after a restart or kill -9 (the kubelet's reconstructVolumes): rebuilds the
// actual state from the root dir alone — staging dirs and pod volume dirs with their
// vol_data.json, block data dirs and publish files — marking every entry "uncertain". The
// reconciler then re-drives each: re-publishes (idempotent in CSI) what pods still want, and
// unpublishes/unstages the rest, so no mount is left behind and nothing is mounted twice.
// vol_data.json is written before every mount call and removed after every unmount, so it
// is present exactly when something may be mounted. Also removes pod dirs left empty.
// Volumes mounted through CSI migration are found with the in-tree plugin they came from (their
// vol_data.json says so), as the seed's "Volume Reconstruction" asks.

import { readdir, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, type Logger } from "../base/index.ts";
import type { ActualState } from "./actual-state.ts";
import { podVolumeKey } from "./desired-state.ts";
import {
  migratedFromVolData,
  readJsonFile,
  stringField,
  uniqueVolumeName,
  VOL_DATA_FILE,
  type KubeletPaths,
} from "./paths.ts";

/** `{ migratedFrom }` when the vol_data.json records a migrated volume, else nothing. */
function migrated(data: Record<string, unknown>): { migratedFrom?: string } {
  const plugin = migratedFromVolData(data);
  return plugin === undefined ? {} : { migratedFrom: plugin };
}

async function list(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

export interface ReconstructionResult {
  staged: number;
  published: number;
}

export async function reconstruct(
  paths: KubeletPaths,
  actual: ActualState,
  logger: Logger,
): Promise<ReconstructionResult> {
  const result = { staged: 0, published: 0 };
  // Filesystem staging: plugins/kubernetes.io/csi/<driver>/<sha>/vol_data.json
  for (const driver of await list(paths.csiPluginDir())) {
    if (driver === "volumeDevices") continue;
    for (const sha of await list(join(paths.csiPluginDir(), driver))) {
      const data = await readJsonFile(join(paths.csiPluginDir(), driver, sha, VOL_DATA_FILE));
      if (!data) continue;
      const handle = stringField(data, "volumeHandle");
      const driverName = stringField(data, "driverName") || driver;
      if (handle === "") continue;
      const uniqueName = uniqueVolumeName(driverName, handle);
      actual.staged.set(uniqueName, {
        uniqueName,
        driver: driverName,
        handle,
        specName: "",
        block: false,
        stagingPath: paths.stagingTarget(driverName, handle),
        staged: true,
        state: "uncertain",
        ...migrated(data),
      });
      result.staged++;
    }
  }
  // Block: plugins/kubernetes.io/csi/volumeDevices/<spec>/data/vol_data.json and publish/<spec>/<uid>.
  for (const specName of await list(paths.blockDevicesDir())) {
    if (specName === "staging" || specName === "publish") continue;
    const data = await readJsonFile(join(paths.blockDataDir(specName), VOL_DATA_FILE));
    if (!data) continue;
    const handle = stringField(data, "volumeHandle");
    const driver = stringField(data, "driverName");
    if (handle === "" || driver === "") continue;
    const uniqueName = uniqueVolumeName(driver, handle);
    actual.staged.set(uniqueName, {
      uniqueName,
      driver,
      handle,
      specName,
      block: true,
      stagingPath: paths.blockStagingTarget(specName),
      staged: true,
      state: "uncertain",
      ...migrated(data),
    });
    result.staged++;
    for (const podUID of await list(paths.blockPublishDir(specName))) {
      const key = podVolumeKey(podUID, specName);
      actual.published.set(key, {
        key,
        podUID,
        specName,
        uniqueName,
        driver,
        handle,
        block: true,
        targetPath: paths.blockPublishTarget(specName, podUID),
        stagingPath: paths.blockStagingTarget(specName),
        state: "uncertain",
        ...migrated(data),
      });
      result.published++;
    }
  }
  // Filesystem publish: pods/<uid>/volumes/kubernetes.io~csi/<spec>/vol_data.json
  for (const podUID of await list(paths.pods)) {
    for (const specName of await list(paths.podCsiVolumesDir(podUID))) {
      const dir = paths.podVolumeDir(podUID, specName);
      const data = await readJsonFile(join(dir, VOL_DATA_FILE));
      if (!data) {
        // No metadata: the unmount finished before the crash; only the empty dirs are left.
        await rmdir(join(dir, "mount")).catch(() => undefined);
        await rmdir(dir).catch(() => undefined);
        continue;
      }
      const handle = stringField(data, "volumeHandle");
      const driver = stringField(data, "driverName");
      if (handle === "" || driver === "") continue;
      const uniqueName = uniqueVolumeName(driver, handle);
      const key = podVolumeKey(podUID, specName);
      actual.published.set(key, {
        key,
        podUID,
        specName,
        uniqueName,
        driver,
        handle,
        block: false,
        targetPath: paths.publishTarget(podUID, specName),
        stagingPath: paths.stagingTarget(driver, handle),
        state: "uncertain",
        ...migrated(data),
      });
      result.published++;
    }
  }
  logger.info(2, "reconstructed volumes from the root dir", result);
  return result;
}

/** Removes pods/<uid> dirs of pods that no longer exist and have nothing mounted (empty dirs only). */
export async function cleanupOrphanedPodDirs(
  paths: KubeletPaths,
  livePods: ReadonlySet<string>,
  actual: ActualState,
  logger: Logger,
): Promise<void> {
  for (const podUID of await list(paths.pods)) {
    if (livePods.has(podUID) || actual.publishedOfPod(podUID).length > 0) continue;
    try {
      for (const dir of [paths.podCsiVolumesDir(podUID), paths.podDeviceDir(podUID)]) {
        await rmdir(dir).catch(() => undefined);
        await rmdir(join(dir, "..")).catch(() => undefined);
      }
      await rmdir(paths.podDir(podUID));
    } catch (error) {
      logger.info(4, "orphaned pod dir not removed yet", { podUID, err: errorMessage(error) });
    }
  }
}
