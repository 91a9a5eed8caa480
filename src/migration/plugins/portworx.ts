// Portworx ↔ pxd.portworx.com. The handle is the Portworx volume ID. The one plugin whose class
// translation also renames the provisioner. Portworx's auth secret, named by the
// `openstorage.io/auth-secret-name`/`-namespace` class parameters (and PV annotations), becomes
// the CSI secrets of every operation.

import type { PersistentVolume, SecretReference, StorageClass, Volume } from "../../api/index.ts";
import type { InTreePlugin } from "../types.ts";
import {
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

export const PORTWORX_DRIVER_NAME = "pxd.portworx.com";
export const PORTWORX_IN_TREE_PLUGIN_NAME = "kubernetes.io/portworx-volume";
export const PORTWORX_AUTH_SECRET_NAME = "openstorage.io/auth-secret-name";
export const PORTWORX_AUTH_SECRET_NAMESPACE = "openstorage.io/auth-secret-namespace";
const SECRET_OPERATIONS = [
  "provisioner",
  "controller-publish",
  "node-stage",
  "node-publish",
  "controller-expand",
  "node-expand",
] as const;

function readSource(source: Record<string, unknown>, where: string) {
  return {
    volumeID: requiredString(source, "volumeID", where),
    fsType: optionalString(source, "fsType", where),
    readOnly: optionalBool(source, "readOnly", where),
  };
}

export const portworxVolume: InTreePlugin = {
  inTreePluginName: PORTWORX_IN_TREE_PLUGIN_NAME,
  csiDriverName: PORTWORX_DRIVER_NAME,
  sourceField: "portworxVolume",

  translateStorageClassToCSI(sc: StorageClass): StorageClass {
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(sc.parameters ?? {})) {
      if (key === PORTWORX_AUTH_SECRET_NAME)
        for (const op of SECRET_OPERATIONS) params[`csi.storage.k8s.io/${op}-secret-name`] = value;
      else if (key === PORTWORX_AUTH_SECRET_NAMESPACE)
        for (const op of SECRET_OPERATIONS) params[`csi.storage.k8s.io/${op}-secret-namespace`] = value;
      else params[key] = value;
    }
    if (sc.parameters !== undefined) sc.parameters = params;
    sc.provisioner = PORTWORX_DRIVER_NAME;
    return sc;
  },

  translateInlineVolumeToCSI(volume: Volume): PersistentVolume {
    const where = `${describeVolume(volume)} (portworxVolume)`;
    const px = readSource(inTreeSource(volume, "portworxVolume", describeVolume(volume)), where);
    return {
      metadata: { name: `${PORTWORX_DRIVER_NAME}-${px.volumeID}` },
      spec: {
        csi: csiSource({ driver: PORTWORX_DRIVER_NAME, volumeHandle: px.volumeID, fsType: px.fsType }),
        accessModes: [px.readOnly ? "ReadOnlyMany" : "ReadWriteOnce"],
      },
    };
  },

  translatePVToCSI(pv: PersistentVolume): PersistentVolume {
    const where = `${describePV(pv)} (portworxVolume)`;
    const px = readSource(inTreeSource(pv.spec, "portworxVolume", describePV(pv)), where);
    const annotations = pv.metadata?.annotations ?? {};
    const name = annotations[PORTWORX_AUTH_SECRET_NAME] ?? "";
    const namespace = annotations[PORTWORX_AUTH_SECRET_NAMESPACE] ?? "";
    const secret: SecretReference | undefined =
      name !== "" && namespace !== "" ? { name, namespace } : undefined;
    setCSISource(
      pv,
      "portworxVolume",
      csiSource({
        driver: PORTWORX_DRIVER_NAME,
        volumeHandle: px.volumeID,
        fsType: px.fsType,
        readOnly: px.readOnly,
        ...(secret !== undefined && {
          controllerPublishSecretRef: { ...secret },
          nodeStageSecretRef: { ...secret },
          nodePublishSecretRef: { ...secret },
          controllerExpandSecretRef: { ...secret },
          nodeExpandSecretRef: { ...secret },
        }),
      }),
    );
    return pv;
  },

  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
    const csi = csiSourceOf(pv);
    setInTreeSource(
      pv,
      "portworxVolume",
      omitEmpty({ volumeID: csi.volumeHandle, fsType: csi.fsType, readOnly: csi.readOnly }),
    );
    return pv;
  },

  repairVolumeHandle(volumeHandle: string): string {
    return volumeHandle;
  },
};
