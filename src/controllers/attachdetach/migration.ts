// The attach/detach controller's share of CSI migration (the seed's "ADC and Kubelet CSI/In-tree
// Sync"): whether an in-tree volume of a pod on a node is attached through its CSI driver, left
// to the in-tree plugin, or refused, decided from the controller's own feature gates and the
// node's CSINode `storage.alpha.kubernetes.io/migrated-plugins` annotation, so the controller and
// the kubelet always take the same path. Migrated volumes are translated to CSI before the
// desired state is built (the VolumeAttachment is named from the translated source). Pure.

import type { CSINode, PersistentVolume, PersistentVolumeSpec, Volume } from "../../api/index.ts";
import {
  isMigratedOnNode,
  isMigrationEnabledForPlugin,
  migratedPluginsOnNode,
  pluginForInlineVolume,
  pluginForPV,
  translateInTreeInlineVolumeToCSI,
  translateInTreePVToCSI,
  type FeatureGates,
} from "../../migration/index.ts";

/** What the controller does with one in-tree volume on one node. */
export type MigrationDecision =
  | { path: "csi" }
  | { path: "in-tree" }
  /** The kubelet migrated the plugin but this controller did not: nothing is safe to do. */
  | { path: "error"; message: string };

/**
 * The seed's four cases: no CSINode, or a CSINode without the plugin → in-tree; with the plugin
 * → CSI; with the plugin while this controller's gates have the plugin's migration off → error.
 * A plugin whose migration is complete (its in-tree code gone, as every plugin but Portworx at
 * 1.32) is CSI whatever the node says.
 */
export function migrationDecision(
  gates: FeatureGates,
  inTreePluginName: string,
  csiNode: CSINode | undefined,
  nodeName: string,
): MigrationDecision {
  if (!isMigrationEnabledForPlugin(gates, inTreePluginName)) {
    if (migratedPluginsOnNode(csiNode).has(inTreePluginName))
      return {
        path: "error",
        message: `kubelet on node ${JSON.stringify(nodeName)} migrated in-tree plugin ${inTreePluginName} to CSI (CSINode annotation storage.alpha.kubernetes.io/migrated-plugins) but CSI migration of that plugin is off in the attach/detach controller`,
      };
    return { path: "in-tree" };
  }
  return isMigratedOnNode(gates, inTreePluginName, csiNode) ? { path: "csi" } : { path: "in-tree" };
}

/** An in-tree PV's plugin, if it has one csikit can migrate (undefined for CSI PVs). */
export function inTreePluginOfPV(pv: PersistentVolume): string | undefined {
  return pv.spec?.csi ? undefined : pluginForPV(pv)?.inTreePluginName;
}

export function inTreePluginOfInlineVolume(volume: Volume): string | undefined {
  return pluginForInlineVolume(volume)?.inTreePluginName;
}

/** The PV's CSI form (the PV itself when it is CSI); undefined when it cannot be translated. */
export function csiFormOfPV(pv: PersistentVolume): PersistentVolume | undefined {
  if (pv.spec?.csi) return pv;
  if (!pluginForPV(pv)) return undefined;
  try {
    return translateInTreePVToCSI(pv);
  } catch {
    return undefined;
  }
}

/**
 * An inline in-tree volume translated: its name (the translated PV's, as the kubelet names the
 * volume) and the PV spec a VolumeAttachment's `inlineVolumeSpec` carries.
 */
export function translatedInlineVolume(
  volume: Volume,
  podNamespace: string,
): { name: string; spec: PersistentVolumeSpec } {
  const pv = translateInTreeInlineVolumeToCSI(volume, podNamespace);
  return { name: pv.metadata?.name ?? volume.name, spec: pv.spec ?? {} };
}
