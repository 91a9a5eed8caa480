// The library's public face (upstream's CSITranslator): translate PVs both ways, inline volumes
// and StorageClasses to CSI, and answer the name and "is it migratable" questions. Every
// function works on a deep copy: the caller's object — often an informer's cached, frozen
// object — is never modified.

import type { PersistentVolume, StorageClass, Volume } from "../api/index.ts";
import { TranslationError } from "./errors.ts";
import { IN_TREE_PLUGINS } from "./plugins/index.ts";
import type { InTreePlugin } from "./types.ts";

function hasSource(holder: Record<string, unknown> | undefined, plugin: InTreePlugin): boolean {
  const source = holder?.[plugin.sourceField];
  return source !== undefined && source !== null;
}

/** The plugin owning the PV's in-tree source, if any. */
export function pluginForPV(pv: PersistentVolume | undefined): InTreePlugin | undefined {
  return IN_TREE_PLUGINS.find((p) => hasSource(pv?.spec, p));
}

/** The plugin owning a pod volume's in-tree source, if any. */
export function pluginForInlineVolume(volume: Volume | undefined): InTreePlugin | undefined {
  return IN_TREE_PLUGINS.find((p) => hasSource(volume, p));
}

/** The plugin with this in-tree name (`kubernetes.io/gce-pd`), if any. */
export function pluginByInTreeName(name: string): InTreePlugin | undefined {
  return IN_TREE_PLUGINS.find((p) => p.inTreePluginName === name);
}

/** The plugin migrated to this CSI driver (`pd.csi.storage.gke.io`), if any. */
export function pluginByDriverName(name: string): InTreePlugin | undefined {
  return IN_TREE_PLUGINS.find((p) => p.csiDriverName === name);
}

/** In-tree PV → the same PV with a CSI source (labels and node affinity rewritten too). */
export function translateInTreePVToCSI(pv: PersistentVolume): PersistentVolume {
  const plugin = pluginForPV(pv);
  if (plugin === undefined)
    throw new TranslationError(
      `could not find in-tree plugin translation logic for PersistentVolume ${JSON.stringify(pv.metadata?.name ?? "")}: no migratable in-tree source (${IN_TREE_PLUGINS.map((p) => p.sourceField).join(", ")})`,
    );
  return plugin.translatePVToCSI(structuredClone(pv));
}

/** CSI PV of a migration target driver → the in-tree PV the plugin would have made. */
export function translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
  const driver = pv.spec?.csi?.driver;
  if (driver === undefined)
    throw new TranslationError(
      `PersistentVolume ${JSON.stringify(pv.metadata?.name ?? "")}: no csi source to translate`,
    );
  const plugin = pluginByDriverName(driver);
  if (plugin === undefined)
    throw new TranslationError(
      `could not find in-tree plugin translation logic for CSI driver ${JSON.stringify(driver)} (PersistentVolume ${JSON.stringify(pv.metadata?.name ?? "")})`,
    );
  return plugin.translateCSIPVToInTree(structuredClone(pv));
}

/**
 * A pod's inline in-tree volume → a PV (name + spec) holding the CSI source, with the access
 * modes the plugin implies and volumeMode Filesystem (inline volumes are never block). This is
 * what a VolumeAttachment's `spec.source.inlineVolumeSpec` carries. podNamespace matters to
 * Azure File only (its secret's namespace).
 */
export function translateInTreeInlineVolumeToCSI(volume: Volume, podNamespace = ""): PersistentVolume {
  const plugin = pluginForInlineVolume(volume);
  if (plugin === undefined)
    throw new TranslationError(
      `could not find in-tree plugin translation logic for volume ${JSON.stringify(volume.name ?? "")}: no migratable in-tree source`,
    );
  const pv = plugin.translateInlineVolumeToCSI(structuredClone(volume), podNamespace);
  (pv.spec ??= {}).volumeMode ??= "Filesystem";
  return pv;
}

/**
 * An in-tree plugin's StorageClass → the class the CSI driver understands: parameters renamed,
 * `zone`/`zones` turned into allowedTopologies, topology keys rewritten. The provisioner field
 * stays as it was (Portworx excepted, as upstream); callers that want a CSI class set it.
 */
export function translateInTreeStorageClassToCSI(inTreePluginName: string, sc: StorageClass): StorageClass {
  const plugin = pluginByInTreeName(inTreePluginName);
  if (plugin === undefined)
    throw new TranslationError(
      `could not find in-tree storage class parameter translation logic for ${JSON.stringify(inTreePluginName)}`,
    );
  return plugin.translateStorageClassToCSI(structuredClone(sc));
}

export function isMigratableInTreePluginByName(name: string): boolean {
  return pluginByInTreeName(name) !== undefined;
}

export function isMigratedCSIDriverByName(name: string): boolean {
  return pluginByDriverName(name) !== undefined;
}

export function isPVMigratable(pv: PersistentVolume): boolean {
  return pluginForPV(pv) !== undefined;
}

export function isInlineMigratable(volume: Volume): boolean {
  return pluginForInlineVolume(volume) !== undefined;
}

/** The in-tree plugin name of a PV's (or else an inline volume's) source. */
export function inTreePluginNameFromSpec(pv: PersistentVolume | undefined, volume?: Volume): string {
  if (pv !== undefined) {
    const plugin = pluginForPV(pv);
    if (plugin === undefined)
      throw new TranslationError(
        `could not find in-tree plugin name from PersistentVolume ${JSON.stringify(pv.metadata?.name ?? "")}`,
      );
    return plugin.inTreePluginName;
  }
  if (volume !== undefined) {
    const plugin = pluginForInlineVolume(volume);
    if (plugin === undefined)
      throw new TranslationError(
        `could not find in-tree plugin name from volume ${JSON.stringify(volume.name ?? "")}`,
      );
    return plugin.inTreePluginName;
  }
  throw new TranslationError("both persistent volume and volume are missing");
}

export function csiNameFromInTreeName(name: string): string {
  const plugin = pluginByInTreeName(name);
  if (plugin === undefined)
    throw new TranslationError(`could not find CSI Driver name for plugin ${JSON.stringify(name)}`);
  return plugin.csiDriverName;
}

export function inTreeNameFromCSIName(name: string): string {
  const plugin = pluginByDriverName(name);
  if (plugin === undefined)
    throw new TranslationError(`could not find In-Tree driver name for CSI plugin ${JSON.stringify(name)}`);
  return plugin.inTreePluginName;
}

/** A fully specified volume handle, inferred from the node ID where the handle says UNSPECIFIED. */
export function repairVolumeHandle(driverName: string, volumeHandle: string, nodeID: string): string {
  const plugin = pluginByDriverName(driverName);
  if (plugin === undefined)
    throw new TranslationError(
      `could not find In-Tree driver name for CSI plugin ${JSON.stringify(driverName)}`,
    );
  return plugin.repairVolumeHandle(volumeHandle, nodeID);
}
