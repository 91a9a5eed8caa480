// The external-provisioner's share of CSI migration, as upstream: a driver that is the
// migration target of an in-tree plugin (pd.csi.storage.gke.io ← kubernetes.io/gce-pd) also
// serves claims of that plugin's StorageClasses. CreateVolume is built from the translated class
// (csi-translation-lib's TranslateInTreeStorageClassToCSI), the PV is created in its in-tree
// form (translated back) with `provisioned-by` naming the plugin, and such PVs — once the PV
// controller marked them `migrated-to` this driver — are deleted through the driver with their
// source translated to CSI. Pure functions; claim-sync.ts and volume-sync.ts call them.

import { ANNOTATIONS, type PersistentVolume, type StorageClass } from "../../api/index.ts";
import {
  pluginByDriverName,
  translateCSIPVToInTree,
  translateInTreePVToCSI,
  translateInTreeStorageClassToCSI,
} from "../../migration/index.ts";

/** The in-tree plugin this driver is the migration target of, if any. */
export function migratedFromPlugin(driverName: string): string | undefined {
  return pluginByDriverName(driverName)?.inTreePluginName;
}

/** Whether a claim's storage-provisioner annotation names this driver (or its in-tree plugin). */
export function isOurClaimProvisioner(driverName: string, provisioner: string | undefined): boolean {
  return (
    provisioner !== undefined &&
    (provisioner === driverName || provisioner === migratedFromPlugin(driverName))
  );
}

/** Whether the class is an in-tree class this driver provisions through migration. */
export function isMigratedClass(driverName: string, storageClass: StorageClass | undefined): boolean {
  const plugin = migratedFromPlugin(driverName);
  return plugin !== undefined && storageClass?.provisioner === plugin;
}

/**
 * The class as this driver sees it: its own classes unchanged, its in-tree plugin's classes
 * translated (and naming the driver, so the rest of the provisioner treats them alike);
 * undefined for anyone else's class.
 */
export function classForDriver(driverName: string, storageClass: StorageClass): StorageClass | undefined {
  if (storageClass.provisioner === driverName) return storageClass;
  if (!isMigratedClass(driverName, storageClass)) return undefined;
  const translated = translateInTreeStorageClassToCSI(storageClass.provisioner, storageClass);
  translated.provisioner = driverName;
  return translated;
}

/** A freshly built CSI PV turned into the in-tree PV the plugin would have made. */
export function inTreeVolume(pv: PersistentVolume, inTreePluginName: string): PersistentVolume {
  const translated = translateCSIPVToInTree(pv);
  const metadata = (translated.metadata ??= {});
  // The claim's class named the plugin; the PV says so (the PV controller then marks it migrated-to).
  metadata.annotations = { ...metadata.annotations, [ANNOTATIONS.provisionedBy.key]: inTreePluginName };
  return translated;
}

/**
 * The PV to delete through this driver in CSI form: this driver's own PVs, and in-tree PVs of
 * its plugin that the PV controller marked migrated-to this driver (translated); else undefined.
 */
export function deletionTarget(driverName: string, pv: PersistentVolume): PersistentVolume | undefined {
  const annotations = pv.metadata?.annotations ?? {};
  const provisionedBy = annotations[ANNOTATIONS.provisionedBy.key];
  if (provisionedBy === driverName) return pv.spec?.csi?.driver === driverName ? pv : undefined;
  const plugin = migratedFromPlugin(driverName);
  if (
    plugin === undefined ||
    provisionedBy !== plugin ||
    annotations[ANNOTATIONS.migratedTo.key] !== driverName
  )
    return undefined;
  if (pv.spec?.csi !== undefined) return pv.spec.csi.driver === driverName ? pv : undefined;
  return translateInTreePVToCSI(pv);
}
