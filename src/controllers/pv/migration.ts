// The PV controller's share of CSI migration (seed 001, "Persistent Volume Controller", and its
// 1/13/2020 update for kubernetes#79043). A claim of an in-tree class whose plugin is migrated
// is handed to the CSI driver: both storage-provisioner annotations name the driver and
// `pv.kubernetes.io/migrated-to` says it was migrated. On every sync, claims and volumes get
// `migrated-to` set while migration is on for their provisioner (a claim's storage-provisioner,
// a volume's provisioned-by) and removed when it is off again (rollback), so the external
// provisioner takes over — or hands back — volumes provisioned before the switch.
//
// A claim this controller handed to a driver names the driver, not the plugin, in its
// storage-provisioner annotation; its `migrated-to` equal to that driver is what marks it as
// the plugin's claim, so that rollback still finds it (upstream never sets migrated-to on such
// claims; the issue asks for it, and this keeps the two annotations from flip-flopping).

import { ANNOTATIONS } from "../../api/index.ts";
import {
  isMigrationEnabledForPlugin,
  pluginByDriverName,
  pluginByInTreeName,
  type FeatureGates,
} from "../../migration/index.ts";

const MIGRATED_TO = ANNOTATIONS.migratedTo.key;
const STORAGE_PROVISIONER = ANNOTATIONS.storageProvisioner.key;
const BETA_STORAGE_PROVISIONER = ANNOTATIONS.betaStorageProvisioner.key;
const PROVISIONED_BY = ANNOTATIONS.provisionedBy.key;

type Annotations = Readonly<Record<string, string>>;

/** The CSI driver that provisions a class's claims when its in-tree plugin is migrated. */
export function migratedProvisioner(gates: FeatureGates, classProvisioner: string): string | undefined {
  const plugin = pluginByInTreeName(classProvisioner);
  return plugin !== undefined && isMigrationEnabledForPlugin(gates, plugin.inTreePluginName)
    ? plugin.csiDriverName
    : undefined;
}

/** migrated-to as it should be for an object of this in-tree (or not) provisioner. */
function reconcile(
  gates: FeatureGates,
  annotations: Annotations,
  provisioner: string,
): Annotations | undefined {
  const current = annotations[MIGRATED_TO];
  const plugin = pluginByInTreeName(provisioner);
  const want =
    plugin !== undefined && isMigrationEnabledForPlugin(gates, plugin.inTreePluginName)
      ? plugin.csiDriverName
      : undefined;
  if (want === current) return undefined;
  const next = { ...annotations };
  if (want === undefined) delete next[MIGRATED_TO];
  else next[MIGRATED_TO] = want;
  return next;
}

/** A claim's annotations with migrated-to brought up to date, or undefined when they are right. */
export function claimMigrationAnnotations(
  gates: FeatureGates,
  annotations: Annotations | undefined,
): Annotations | undefined {
  if (annotations === undefined) return undefined;
  let provisioner = annotations[STORAGE_PROVISIONER] ?? annotations[BETA_STORAGE_PROVISIONER];
  if (provisioner === undefined) return undefined;
  // A claim handed to a migration driver by this controller is still the in-tree plugin's claim.
  const driverPlugin = pluginByDriverName(provisioner);
  if (driverPlugin !== undefined && annotations[MIGRATED_TO] === provisioner)
    provisioner = driverPlugin.inTreePluginName;
  return reconcile(gates, annotations, provisioner);
}

/** A volume's annotations with migrated-to brought up to date (dynamically provisioned ones only). */
export function volumeMigrationAnnotations(
  gates: FeatureGates,
  annotations: Annotations | undefined,
): Annotations | undefined {
  const provisioner = annotations?.[PROVISIONED_BY];
  if (annotations === undefined || provisioner === undefined) return undefined;
  return reconcile(gates, annotations, provisioner);
}
