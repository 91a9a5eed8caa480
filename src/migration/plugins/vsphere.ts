// vSphere volume ↔ csi.vsphere.vmware.com. In-tree → CSI uses the VMDK path as the handle and
// renames the class parameters the driver knows to their `-migrationparam` spellings (unknown
// ones are dropped), adding `csimigration=true` so the driver answers with the VMDK path in the
// `initialvolumefilepath` attribute — the only place the reverse translation reads the path
// from. Zone and region both have driver keys, so both are rewritten, from affinity or labels.

import type { PersistentVolume, StorageClass, Volume } from "../../api/index.ts";
import { TranslationError } from "../errors.ts";
import {
  addTopology,
  replaceTopology,
  topologyLabels,
  topologyValues,
  translateAllowedTopologies,
} from "../topology.ts";
import type { InTreePlugin } from "../types.ts";
import {
  CSI_FSTYPE_PARAM,
  FSTYPE_PARAM,
  csiSource,
  csiSourceOf,
  describePV,
  describeVolume,
  inTreeSource,
  omitEmpty,
  optionalString,
  requiredString,
  setCSISource,
  setInTreeSource,
} from "../util.ts";

export const VSPHERE_DRIVER_NAME = "csi.vsphere.vmware.com";
export const VSPHERE_IN_TREE_PLUGIN_NAME = "kubernetes.io/vsphere-volume";
export const VSPHERE_TOPOLOGY_ZONE_KEY = "topology.csi.vmware.com/zone";
export const VSPHERE_TOPOLOGY_REGION_KEY = "topology.csi.vmware.com/region";
/** Volume attribute the driver returns in migration mode: the VMDK path. */
export const VSPHERE_INITIAL_VOLUME_FILEPATH = "initialvolumefilepath";
const STORAGE_POLICY_NAME = "storagepolicyname";

/** In-tree parameter (lower case) → the driver's migration parameter. */
const PARAMETERS: Readonly<Record<string, string>> = {
  [FSTYPE_PARAM]: CSI_FSTYPE_PARAM,
  [STORAGE_POLICY_NAME]: STORAGE_POLICY_NAME,
  datastore: "datastore-migrationparam",
  diskformat: "diskformat-migrationparam",
  hostfailurestotolerate: "hostfailurestotolerate-migrationparam",
  forceprovisioning: "forceprovisioning-migrationparam",
  cachereservation: "cachereservation-migrationparam",
  diskstripes: "diskstripes-migrationparam",
  objectspacereservation: "objectspacereservation-migrationparam",
  iopslimit: "iopslimit-migrationparam",
};

function attributes(source: Record<string, unknown>, where: string): Record<string, string> {
  const policy = optionalString(source, "storagePolicyName", where);
  return policy !== "" ? { [STORAGE_POLICY_NAME]: policy } : {};
}

function setLabelIfAbsent(pv: PersistentVolume, key: string, value: string): void {
  const labels = ((pv.metadata ??= {}).labels ??= {});
  if (!Object.hasOwn(labels, key)) labels[key] = value;
}

function topologyToCSI(pv: PersistentVolume): void {
  const [zoneLabel, regionLabel] = topologyLabels(pv);
  for (const [label, key] of [
    [zoneLabel, VSPHERE_TOPOLOGY_ZONE_KEY],
    [regionLabel, VSPHERE_TOPOLOGY_REGION_KEY],
  ] as const) {
    if (topologyValues(pv, label).length > 0) replaceTopology(pv, label, key);
    else {
      const value = pv.metadata?.labels?.[label] ?? "";
      if (value !== "") addTopology(pv, key, [value]);
    }
  }
}

function topologyToInTree(pv: PersistentVolume): void {
  const [zoneLabel, regionLabel] = topologyLabels(pv);
  replaceTopology(pv, VSPHERE_TOPOLOGY_ZONE_KEY, zoneLabel);
  replaceTopology(pv, VSPHERE_TOPOLOGY_REGION_KEY, regionLabel);
  const zones = topologyValues(pv, zoneLabel);
  if (zones.length > 0) setLabelIfAbsent(pv, zoneLabel, zones[0]!);
  const regions = topologyValues(pv, regionLabel);
  if (regions.length > 0) setLabelIfAbsent(pv, regionLabel, regions[0]!);
}

export const vsphereVolume: InTreePlugin = {
  inTreePluginName: VSPHERE_IN_TREE_PLUGIN_NAME,
  csiDriverName: VSPHERE_DRIVER_NAME,
  sourceField: "vsphereVolume",

  translateStorageClassToCSI(sc: StorageClass): StorageClass {
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(sc.parameters ?? {})) {
      const target = PARAMETERS[key.toLowerCase()];
      // Parameters the driver does not know are dropped, as upstream (logged there at V(2)).
      if (target !== undefined) params[target] = value;
    }
    params.csimigration = "true";
    if ((sc.allowedTopologies ?? []).length > 0)
      sc.allowedTopologies = translateAllowedTopologies(sc.allowedTopologies!, VSPHERE_TOPOLOGY_ZONE_KEY);
    sc.parameters = params;
    return sc;
  },

  translateInlineVolumeToCSI(volume: Volume): PersistentVolume {
    const where = `${describeVolume(volume)} (vsphereVolume)`;
    const source = inTreeSource(volume, "vsphereVolume", describeVolume(volume));
    const path = requiredString(source, "volumePath", where);
    return {
      metadata: { name: `${VSPHERE_DRIVER_NAME}-${path}` },
      spec: {
        csi: csiSource({
          driver: VSPHERE_DRIVER_NAME,
          volumeHandle: path,
          fsType: optionalString(source, "fsType", where),
          volumeAttributes: attributes(source, where),
        }),
        accessModes: ["ReadWriteOnce"],
      },
    };
  },

  translatePVToCSI(pv: PersistentVolume): PersistentVolume {
    const where = `${describePV(pv)} (vsphereVolume)`;
    const source = inTreeSource(pv.spec, "vsphereVolume", describePV(pv));
    const csi = csiSource({
      driver: VSPHERE_DRIVER_NAME,
      volumeHandle: requiredString(source, "volumePath", where),
      fsType: optionalString(source, "fsType", where),
      volumeAttributes: attributes(source, where),
    });
    topologyToCSI(pv);
    setCSISource(pv, "vsphereVolume", csi);
    return pv;
  },

  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
    const csi = csiSourceOf(pv);
    const path = csi.volumeAttributes?.[VSPHERE_INITIAL_VOLUME_FILEPATH] ?? "";
    if (path === "")
      throw new TranslationError(
        `${describePV(pv)}: no ${VSPHERE_INITIAL_VOLUME_FILEPATH} volume attribute: only volumes the vSphere CSI driver created in migration mode (csimigration=true) can be translated back to vsphereVolume`,
      );
    topologyToInTree(pv);
    // volumePath is required on the wire, so it is written even when empty.
    setInTreeSource(pv, "vsphereVolume", { volumePath: path, ...omitEmpty({ fsType: csi.fsType }) });
    return pv;
  },

  repairVolumeHandle(volumeHandle: string): string {
    return volumeHandle;
  },
};
