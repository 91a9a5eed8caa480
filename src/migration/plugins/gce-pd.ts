// GCE Persistent Disk ↔ pd.csi.storage.gke.io. Handles are
// `projects/<project>/zones/<zone>/disks/<name>` or `…/regions/<region>/disks/<name>`; the
// translation never knows the project (and an inline disk not its zone), so it writes
// `UNSPECIFIED` and the driver or RepairVolumeHandle fills it from the node ID. A PV labelled
// with several zones (`a__b`) is a regional disk. Access modes are coerced to what the driver
// accepts, because the in-tree plugin never enforced them.

import type { PersistentVolume, PersistentVolumeAccessMode, StorageClass, Volume } from "../../api/index.ts";
import { TranslationError } from "../errors.ts";
import {
  LABEL_BETA_ZONE,
  LABEL_TOPOLOGY_ZONE,
  MULTI_ZONE_DELIMITER,
  translateTopologyToCSI,
  translateTopologyToInTree,
  zonalStorageClassTopology,
} from "../topology.ts";
import type { GCEPersistentDiskVolumeSource, InTreePlugin } from "../types.ts";
import {
  CSI_FSTYPE_PARAM,
  FSTYPE_PARAM,
  csiSource,
  csiSourceOf,
  describePV,
  describeVolume,
  inTreeSource,
  omitEmpty,
  optionalBool,
  optionalInt,
  optionalString,
  parseIntAttribute,
  requiredString,
  setCSISource,
  setInTreeSource,
} from "../util.ts";

export const GCE_PD_DRIVER_NAME = "pd.csi.storage.gke.io";
export const GCE_PD_IN_TREE_PLUGIN_NAME = "kubernetes.io/gce-pd";
export const GCE_PD_TOPOLOGY_KEY = "topology.gke.io/zone";
export const UNSPECIFIED = "UNSPECIFIED";

// Positions in a handle split on "/": projects/<1>/<2 zones|regions>/<3>/disks/<5>.
const PROJECT = 1;
const REGIONALITY = 2;
const LOCATION = 3;
const DISK = 5;
const HANDLE_PARTS = 6;

function zonalHandle(project: string, zone: string, disk: string): string {
  return `projects/${project}/zones/${zone}/disks/${disk}`;
}

function regionalHandle(project: string, region: string, disk: string): string {
  return `projects/${project}/regions/${region}/disks/${disk}`;
}

/** The one region of GCE zones (`<locale>-<region>-<zone>`, e.g. us-central1-a → us-central1). */
export function gceRegionFromZones(zones: readonly string[]): string {
  if (zones.length === 0) throw new TranslationError("no zones specified");
  const regions = new Set<string>();
  for (const zone of zones) {
    const parts = zone.split("-");
    if (parts.length !== 3)
      throw new TranslationError(
        `zone in unexpected format, expected: {locale}-{region}-{zone}, got: ${zone}`,
      );
    regions.add(`${parts[0]}-${parts[1]}`);
  }
  if (regions.size !== 1)
    throw new TranslationError(`multiple or no regions gotten from zones, got: ${[...regions].join(",")}`);
  return [...regions][0]!;
}

/**
 * RWX becomes RWO and RWO+ROX becomes RWO: the in-tree plugin attached such disks read-write to
 * one node anyway, and the CSI driver (and external-attacher) reject those combinations.
 */
export function backwardCompatibleAccessModes(
  modes: readonly PersistentVolumeAccessMode[] | undefined,
): PersistentVolumeAccessMode[] | undefined {
  if (modes === undefined) return undefined;
  const set = new Set(modes.map((m) => (m === "ReadWriteMany" ? "ReadWriteOnce" : m)));
  if (set.has("ReadWriteOnce")) return ["ReadWriteOnce"];
  if (set.has("ReadOnlyMany")) return ["ReadOnlyMany"];
  return ["ReadWriteOnce"];
}

/** The disk name of a handle (6 or more `/`-separated parts). */
export function pdNameFromHandle(handle: string): string {
  const parts = handle.split("/");
  if (parts.length < HANDLE_PARTS)
    throw new TranslationError(
      `GCE PD volume handle ${JSON.stringify(handle)} has ${parts.length} components, wanted ${HANDLE_PARTS} or more (projects/<project>/zones/<zone>/disks/<name>)`,
    );
  const disk = parts[DISK]!;
  if (disk === "")
    throw new TranslationError(`GCE PD volume handle ${JSON.stringify(handle)} has an empty disk name`);
  return disk;
}

function readSource(source: Record<string, unknown>, where: string): Required<GCEPersistentDiskVolumeSource> {
  const partition = optionalInt(source, "partition", where);
  if (partition < 0) throw new TranslationError(`${where}: partition must not be negative, got ${partition}`);
  return {
    pdName: requiredString(source, "pdName", where),
    fsType: optionalString(source, "fsType", where),
    partition,
    readOnly: optionalBool(source, "readOnly", where),
  };
}

function partitionAttribute(partition: number): string {
  return partition !== 0 ? String(partition) : "";
}

export const gcePersistentDisk: InTreePlugin = {
  inTreePluginName: GCE_PD_IN_TREE_PLUGIN_NAME,
  csiDriverName: GCE_PD_DRIVER_NAME,
  sourceField: "gcePersistentDisk",

  translateStorageClassToCSI(sc: StorageClass): StorageClass {
    sc.parameters = zonalStorageClassTopology(sc, GCE_PD_TOPOLOGY_KEY, (key, value, params) => {
      // The provisioner strips the prefixed fstype and hands it to the driver as the fsType.
      if (key.toLowerCase() === FSTYPE_PARAM) params[CSI_FSTYPE_PARAM] = value;
      else params[key] = value;
    });
    return sc;
  },

  translateInlineVolumeToCSI(volume: Volume): PersistentVolume {
    const where = `${describeVolume(volume)} (gcePersistentDisk)`;
    const pd = readSource(inTreeSource(volume, "gcePersistentDisk", describeVolume(volume)), where);
    return {
      // Unique per disk: it names the staging path.
      metadata: { name: `${GCE_PD_DRIVER_NAME}-${pd.pdName}` },
      spec: {
        csi: csiSource({
          driver: GCE_PD_DRIVER_NAME,
          volumeHandle: zonalHandle(UNSPECIFIED, UNSPECIFIED, pd.pdName),
          readOnly: pd.readOnly,
          fsType: pd.fsType,
          volumeAttributes: { partition: partitionAttribute(pd.partition) },
        }),
        accessModes: [pd.readOnly ? "ReadOnlyMany" : "ReadWriteOnce"],
        volumeMode: "Filesystem",
      },
    };
  },

  translatePVToCSI(pv: PersistentVolume): PersistentVolume {
    const where = `${describePV(pv)} (gcePersistentDisk)`;
    const pd = readSource(inTreeSource(pv.spec, "gcePersistentDisk", describePV(pv)), where);
    const labels = pv.metadata?.labels ?? {};
    // The label is the beta key on PVs made before 1.17, the GA key after.
    const zoneLabel = labels[LABEL_BETA_ZONE] || labels[LABEL_TOPOLOGY_ZONE] || "";
    const zones = zoneLabel.split(MULTI_ZONE_DELIMITER);
    let handle: string;
    if (zones.length === 1 && zones[0] !== "") handle = zonalHandle(UNSPECIFIED, zones[0]!, pd.pdName);
    else if (zones.length > 1) {
      let region: string;
      try {
        region = gceRegionFromZones(zones);
      } catch (error) {
        throw new TranslationError(`${where}: failed to get region from zones: ${(error as Error).message}`);
      }
      handle = regionalHandle(UNSPECIFIED, region, pd.pdName);
    } else handle = zonalHandle(UNSPECIFIED, UNSPECIFIED, pd.pdName);
    translateTopologyToCSI(pv, GCE_PD_TOPOLOGY_KEY);
    setCSISource(
      pv,
      "gcePersistentDisk",
      csiSource({
        driver: GCE_PD_DRIVER_NAME,
        volumeHandle: handle,
        readOnly: pd.readOnly,
        fsType: pd.fsType,
        volumeAttributes: { partition: partitionAttribute(pd.partition) },
      }),
    );
    const modes = backwardCompatibleAccessModes(pv.spec?.accessModes);
    if (modes !== undefined) pv.spec!.accessModes = modes;
    return pv;
  },

  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
    const csi = csiSourceOf(pv);
    const pdName = pdNameFromHandle(csi.volumeHandle);
    const partitionText = csi.volumeAttributes?.partition ?? "";
    const partition = partitionText !== "" ? parseIntAttribute(partitionText, "partition") : 0;
    try {
      translateTopologyToInTree(pv, GCE_PD_TOPOLOGY_KEY, gceRegionFromZones);
    } catch (error) {
      throw new TranslationError(
        `${describePV(pv)}: failed to translate topology: ${(error as Error).message}`,
      );
    }
    setInTreeSource(
      pv,
      "gcePersistentDisk",
      omitEmpty({ pdName, fsType: csi.fsType, partition, readOnly: csi.readOnly }),
    );
    return pv;
  },

  repairVolumeHandle(volumeHandle: string, nodeID: string): string {
    const parts = volumeHandle.split("/");
    if (parts.length < HANDLE_PARTS)
      throw new TranslationError(
        `volume handle has wrong number of elements; got ${parts.length}, wanted ${HANDLE_PARTS} or more`,
      );
    if (parts[PROJECT] !== UNSPECIFIED) return volumeHandle;
    const node = nodeID.split("/");
    if (node.length < HANDLE_PARTS)
      throw new TranslationError(
        `node handle has wrong number of elements; got ${node.length}, wanted ${HANDLE_PARTS} or more`,
      );
    const location = parts[LOCATION]!;
    switch (parts[REGIONALITY]) {
      case "zones": {
        const zone = location === UNSPECIFIED ? node[LOCATION]! : location;
        return zonalHandle(node[PROJECT]!, zone, parts[DISK]!);
      }
      case "regions": {
        const region = location === UNSPECIFIED ? gceRegionFromZones([node[LOCATION]!]) : location;
        return regionalHandle(node[PROJECT]!, region, parts[DISK]!);
      }
      default:
        throw new TranslationError(
          `expected volume handle to have zones or regions regionality value, got: ${parts[REGIONALITY]}`,
        );
    }
  },
};
