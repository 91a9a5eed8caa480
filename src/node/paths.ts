// The kubelet's on-disk layout under its root dir (FACTS.md "Kubelet paths") and the
// vol_data.json files that let a restarted node find what it had mounted. Pure path helpers
// plus small atomic JSON file I/O; nothing here talks to a driver or the API server.

import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { isErrno } from "../base/index.ts";

/** The in-tree plugin name of CSI in kubelet paths ("kubernetes.io/csi", "kubernetes.io~csi"). */
export const CSI_PLUGIN_NAME = "kubernetes.io/csi";
const ESCAPED_PLUGIN_NAME = "kubernetes.io~csi";
export const VOL_DATA_FILE = "vol_data.json";

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Unique volume name as node status and the attach/detach controller spell it. */
export function uniqueVolumeName(driver: string, volumeHandle: string): string {
  return `${CSI_PLUGIN_NAME}/${driver}^${volumeHandle}`;
}

/** VolumeAttachment name: csi-<sha256(handle + driver + node)>, plain concatenation. */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${sha256Hex(volumeHandle + driver + nodeName)}`;
}

/** Handle of an inline ephemeral volume: csi-<sha256(podUID + volume spec name)>. */
export function ephemeralVolumeHandle(podUID: string, volumeName: string): string {
  return `csi-${sha256Hex(podUID + volumeName)}`;
}

export class KubeletPaths {
  readonly root: string;
  constructor(root: string) {
    this.root = root;
  }
  get pluginsRegistry(): string {
    return join(this.root, "plugins_registry");
  }
  get pods(): string {
    return join(this.root, "pods");
  }
  podDir(podUID: string): string {
    return join(this.root, "pods", podUID);
  }
  /** Parent of every filesystem publish dir of a pod. */
  podCsiVolumesDir(podUID: string): string {
    return join(this.podDir(podUID), "volumes", ESCAPED_PLUGIN_NAME);
  }
  /** pods/<uid>/volumes/kubernetes.io~csi/<specName> (holds mount/ and vol_data.json). */
  podVolumeDir(podUID: string, specName: string): string {
    return join(this.podCsiVolumesDir(podUID), specName);
  }
  publishTarget(podUID: string, specName: string): string {
    return join(this.podVolumeDir(podUID, specName), "mount");
  }
  csiPluginDir(): string {
    return join(this.root, "plugins", CSI_PLUGIN_NAME);
  }
  /** plugins/kubernetes.io/csi/<driver>/<sha256(handle)> (holds globalmount/ and vol_data.json). */
  stagingDir(driver: string, volumeHandle: string): string {
    return join(this.csiPluginDir(), driver, sha256Hex(volumeHandle));
  }
  stagingTarget(driver: string, volumeHandle: string): string {
    return join(this.stagingDir(driver, volumeHandle), "globalmount");
  }
  // ---- raw block ----
  blockDevicesDir(): string {
    return join(this.csiPluginDir(), "volumeDevices");
  }
  blockStagingTarget(specName: string): string {
    return join(this.blockDevicesDir(), "staging", specName);
  }
  blockPublishDir(specName: string): string {
    return join(this.blockDevicesDir(), "publish", specName);
  }
  blockPublishTarget(specName: string, podUID: string): string {
    return join(this.blockPublishDir(specName), podUID);
  }
  /** plugins/kubernetes.io/csi/volumeDevices/<specName>/data (vol_data.json of a block volume). */
  blockDataDir(specName: string): string {
    return join(this.blockDevicesDir(), specName, "data");
  }
  podDeviceDir(podUID: string): string {
    return join(this.podDir(podUID), "volumeDevices", ESCAPED_PLUGIN_NAME);
  }
  podDeviceLink(podUID: string, specName: string): string {
    return join(this.podDeviceDir(podUID), specName);
  }
}

/**
 * CSI migration (the seed's "Volume Reconstruction"): vol_data.json of a volume translated from
 * an in-tree plugin also says so, so a restarted node knows it was mounted migrated and from
 * which plugin. Absent for CSI volumes, whose files stay exactly the kubelet's; the kubelet
 * reads vol_data.json as a string map and ignores keys it does not know.
 */
export interface MigratedVolData {
  migrated?: "true";
  inTreePluginName?: string;
}

export function migratedVolData(migratedFrom: string | undefined): MigratedVolData {
  return migratedFrom === undefined ? {} : { migrated: "true", inTreePluginName: migratedFrom };
}

/** The in-tree plugin a vol_data.json says its volume was migrated from, if any. */
export function migratedFromVolData(data: Record<string, unknown>): string | undefined {
  if (data.migrated !== "true") return undefined;
  const plugin = data.inTreePluginName;
  return typeof plugin === "string" && plugin !== "" ? plugin : undefined;
}

/** vol_data.json beside a staging dir: what UnmountDevice needs after a restart. */
export interface StagingVolData extends MigratedVolData {
  volumeHandle: string;
  driverName: string;
}

/** vol_data.json beside a publish dir (and in a block volume's data dir). */
export interface PublishVolData extends MigratedVolData {
  specVolID: string;
  volumeHandle: string;
  driverName: string;
  nodeName: string;
  attachmentID: string;
  volumeLifecycleMode: "Persistent" | "Ephemeral";
}

/** Writes JSON through a temp file and rename, so a kill -9 never leaves half a file. */
export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o750 });
  const temp = `${path}.tmp`;
  await writeFile(temp, JSON.stringify(value), { mode: 0o640 });
  await rename(temp, path);
}

/** Parsed JSON object, or undefined when the file is missing or not a JSON object. */
export async function readJsonFile(path: string): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (isErrno(error, "ENOENT") || isErrno(error, "ENOTDIR")) return undefined;
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export function stringField(record: Record<string, unknown>, key: string): string {
  const value = record[key];
  return typeof value === "string" ? value : "";
}
