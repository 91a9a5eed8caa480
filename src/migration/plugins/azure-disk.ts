// Azure Disk ↔ disk.csi.azure.com. The handle is the disk URI (an ARM resource ID for managed
// disks, a blob URL ending in /vhds/<name> for unmanaged ones); the reverse translation takes
// the disk name back out of it. cachingMode, fsType and kind travel as volume attributes, and
// `csi-migration=true` tells the driver the volume came from the in-tree plugin.

import type { PersistentVolume, StorageClass, Volume } from "../../api/index.ts";
import { TranslationError } from "../errors.ts";
import { zonalStorageClassTopology } from "../topology.ts";
import type { InTreePlugin } from "../types.ts";
import {
  csiSource,
  csiSourceOf,
  describePV,
  describeVolume,
  inTreeSource,
  optionalBool,
  optionalString,
  requiredString,
  setCSISource,
  setInTreeSource,
} from "../util.ts";

export const AZURE_DISK_DRIVER_NAME = "disk.csi.azure.com";
export const AZURE_DISK_IN_TREE_PLUGIN_NAME = "kubernetes.io/azure-disk";
export const AZURE_DISK_TOPOLOGY_KEY = "topology.disk.csi.azure.com/zone";
const KIND = "kind";
const CACHING_MODE = "cachingMode";
const FS_TYPE = "fsType";
const CSI_MIGRATION = "csi-migration";

const MANAGED_DISK_PATH =
  /.*\/subscriptions\/(?:.*)\/resourceGroups\/(?:.*)\/providers\/Microsoft.Compute\/disks\/(.+)/;
const UNMANAGED_DISK_PATH = /http(?:.*):\/\/(?:.*)\/vhds\/(.+)/;

/** The disk name at the end of a managed (ARM ID) or unmanaged (…/vhds/<name>) disk URI. */
export function azureDiskName(diskURI: string): string {
  const managed = !(diskURI.length > 4 && diskURI.slice(0, 4).toLowerCase() === "http");
  const pattern = managed ? MANAGED_DISK_PATH : UNMANAGED_DISK_PATH;
  const match = pattern.exec(diskURI);
  // Go's FindStringSubmatch matches anywhere, like exec; the capture is the name.
  if (match === null || match[1] === undefined)
    throw new TranslationError(`could not get disk name from ${diskURI}, correct format: ${pattern.source}`);
  return match[1];
}

function attributes(source: Record<string, unknown>, where: string, dropEmptyCaching: boolean) {
  const attrs: Record<string, string> = { [KIND]: "Managed", [CSI_MIGRATION]: "true" };
  const caching = source.cachingMode;
  if (caching !== undefined && caching !== null) {
    const mode = optionalString(source, "cachingMode", where);
    // The inline translation skips an empty caching mode; the PV one copies it as is.
    if (!(dropEmptyCaching && mode === "")) attrs[CACHING_MODE] = mode;
  }
  if (source.fsType !== undefined && source.fsType !== null)
    attrs[FS_TYPE] = optionalString(source, "fsType", where);
  if (source.kind !== undefined && source.kind !== null) attrs[KIND] = optionalString(source, "kind", where);
  return attrs;
}

function translate(source: Record<string, unknown>, where: string, inline: boolean) {
  return csiSource({
    driver: AZURE_DISK_DRIVER_NAME,
    volumeHandle: requiredString(source, "diskURI", where),
    readOnly: optionalBool(source, "readOnly", where),
    fsType: optionalString(source, "fsType", where),
    volumeAttributes: attributes(source, where, inline),
  });
}

export const azureDisk: InTreePlugin = {
  inTreePluginName: AZURE_DISK_IN_TREE_PLUGIN_NAME,
  csiDriverName: AZURE_DISK_DRIVER_NAME,
  sourceField: "azureDisk",

  translateStorageClassToCSI(sc: StorageClass): StorageClass {
    // fstype is passed through unprefixed: the Azure Disk driver reads `fsType` itself.
    const params = zonalStorageClassTopology(sc, AZURE_DISK_TOPOLOGY_KEY, (key, value, out) => {
      out[key] = value;
    });
    params[CSI_MIGRATION] = "true";
    sc.parameters = params;
    return sc;
  },

  translateInlineVolumeToCSI(volume: Volume): PersistentVolume {
    const where = `${describeVolume(volume)} (azureDisk)`;
    const source = inTreeSource(volume, "azureDisk", describeVolume(volume));
    const diskName = requiredString(source, "diskName", where);
    return {
      metadata: { name: `${AZURE_DISK_DRIVER_NAME}-${diskName}` },
      spec: { csi: translate(source, where, true), accessModes: ["ReadWriteOnce"] },
    };
  },

  translatePVToCSI(pv: PersistentVolume): PersistentVolume {
    const where = `${describePV(pv)} (azureDisk)`;
    const source = inTreeSource(pv.spec, "azureDisk", describePV(pv));
    setCSISource(pv, "azureDisk", translate(source, where, false));
    return pv;
  },

  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
    const csi = csiSourceOf(pv);
    const diskURI = csi.volumeHandle;
    const attrs = csi.volumeAttributes ?? {};
    // Go writes fsType, readOnly and kind as pointers, so they appear even when empty/false.
    const azure: Record<string, unknown> = {
      diskName: azureDiskName(diskURI),
      diskURI,
      fsType: csi.fsType ?? "",
      readOnly: csi.readOnly ?? false,
      kind: "Managed",
    };
    if (Object.hasOwn(attrs, CACHING_MODE)) azure.cachingMode = attrs[CACHING_MODE];
    if ((attrs[FS_TYPE] ?? "") !== "") azure.fsType = attrs[FS_TYPE];
    if ((attrs[KIND] ?? "") !== "") azure.kind = attrs[KIND];
    setInTreeSource(pv, "azureDisk", azure);
    return pv;
  },

  repairVolumeHandle(volumeHandle: string): string {
    return volumeHandle;
  },
};
