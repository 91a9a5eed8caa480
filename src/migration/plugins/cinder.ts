// OpenStack Cinder ↔ cinder.csi.openstack.org. The handle is the Cinder volume ID. Topology
// goes to the driver's zone key; the region cannot be derived from a Cinder zone, so the
// reverse translation adds none. `availability` stays a parameter: the driver reads it itself.

import type { PersistentVolume, StorageClass, Volume } from "../../api/index.ts";
import { TranslationError } from "../errors.ts";
import {
  translateAllowedTopologies,
  translateTopologyToCSI,
  translateTopologyToInTree,
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
  optionalBool,
  optionalString,
  requiredString,
  setCSISource,
  setInTreeSource,
} from "../util.ts";

export const CINDER_DRIVER_NAME = "cinder.csi.openstack.org";
export const CINDER_IN_TREE_PLUGIN_NAME = "kubernetes.io/cinder";
export const CINDER_TOPOLOGY_KEY = "topology.cinder.csi.openstack.org/zone";

function readSource(source: Record<string, unknown>, where: string) {
  return {
    volumeID: requiredString(source, "volumeID", where),
    fsType: optionalString(source, "fsType", where),
    readOnly: optionalBool(source, "readOnly", where),
  };
}

export const cinder: InTreePlugin = {
  inTreePluginName: CINDER_IN_TREE_PLUGIN_NAME,
  csiDriverName: CINDER_DRIVER_NAME,
  sourceField: "cinder",

  translateStorageClassToCSI(sc: StorageClass): StorageClass {
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(sc.parameters ?? {})) {
      if (key.toLowerCase() === FSTYPE_PARAM) params[CSI_FSTYPE_PARAM] = value;
      else params[key] = value;
    }
    if ((sc.allowedTopologies ?? []).length > 0)
      sc.allowedTopologies = translateAllowedTopologies(sc.allowedTopologies!, CINDER_TOPOLOGY_KEY);
    sc.parameters = params;
    return sc;
  },

  translateInlineVolumeToCSI(volume: Volume): PersistentVolume {
    const where = `${describeVolume(volume)} (cinder)`;
    const c = readSource(inTreeSource(volume, "cinder", describeVolume(volume)), where);
    return {
      metadata: { name: `${CINDER_DRIVER_NAME}-${c.volumeID}` },
      spec: {
        csi: csiSource({
          driver: CINDER_DRIVER_NAME,
          volumeHandle: c.volumeID,
          readOnly: c.readOnly,
          fsType: c.fsType,
        }),
        accessModes: ["ReadWriteOnce"],
      },
    };
  },

  translatePVToCSI(pv: PersistentVolume): PersistentVolume {
    const where = `${describePV(pv)} (cinder)`;
    const c = readSource(inTreeSource(pv.spec, "cinder", describePV(pv)), where);
    translateTopologyToCSI(pv, CINDER_TOPOLOGY_KEY);
    setCSISource(
      pv,
      "cinder",
      csiSource({
        driver: CINDER_DRIVER_NAME,
        volumeHandle: c.volumeID,
        readOnly: c.readOnly,
        fsType: c.fsType,
      }),
    );
    return pv;
  },

  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
    const csi = csiSourceOf(pv);
    try {
      translateTopologyToInTree(pv, CINDER_TOPOLOGY_KEY);
    } catch (error) {
      throw new TranslationError(
        `${describePV(pv)}: failed to translate topology: ${(error as Error).message}`,
      );
    }
    setInTreeSource(
      pv,
      "cinder",
      omitEmpty({ volumeID: csi.volumeHandle, fsType: csi.fsType, readOnly: csi.readOnly }),
    );
    return pv;
  },

  repairVolumeHandle(volumeHandle: string): string {
    return volumeHandle;
  },
};
