// What a VolumeAttachment's source says about the volume, as the CSI calls need it: the PV's
// (or, for a migrated inline volume, `spec.source.inlineVolumeSpec`'s) CSI source and spec —
// an in-tree PV of a migrated plugin translated to CSI first, as upstream's attacher does —
// and from them the volume capability (external-attacher's GetVolumeCapabilities: block vs
// mount, fsType with --default-fstype, mountOptions, access modes mapped as csi-lib-utils
// does). Pure functions: the PV comes from a lookup the caller gives (the informer's cache).
// Every error names what is wrong; it becomes status.attachError/detachError word for word.

import type {
  CSIPersistentVolumeSource,
  PersistentVolume,
  PersistentVolumeSpec,
  VolumeAttachment,
} from "../../api/index.ts";
import type { VolumeCapabilityInput } from "../../csi/index.ts";
import { csiAccessMode } from "../../kube/index.ts";
import { isPVMigratable, translateInTreePVToCSI } from "../../migration/index.ts";

/** The volume one VolumeAttachment is about. */
export interface AttachmentVolume {
  /** The PV named by spec.source.persistentVolumeName; undefined for an inline spec. */
  pv: PersistentVolume | undefined;
  spec: PersistentVolumeSpec;
  csi: CSIPersistentVolumeSource;
  /**
   * CSI migration: an in-tree PV translated, or an inline spec (only migrated inline volumes
   * have one). Marks the CSI calls `migrated="true"` in the metrics.
   */
  migrated: boolean;
}

export class VolumeSourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VolumeSourceError";
  }
}

/**
 * The volume of `va`: its PV from `lookupPV` (undefined = not found) or its inline spec.
 * Throws VolumeSourceError when the source is malformed, the PV is missing or not CSI.
 */
export function attachmentVolume(
  va: VolumeAttachment,
  lookupPV: (name: string) => PersistentVolume | undefined,
): AttachmentVolume {
  const { persistentVolumeName, inlineVolumeSpec } = va.spec.source;
  if (persistentVolumeName !== undefined && persistentVolumeName !== "") {
    if (inlineVolumeSpec)
      throw new VolumeSourceError(
        "both InlineCSIVolumeSource and PersistentVolumeName specified in VA source",
      );
    const pv = lookupPV(persistentVolumeName);
    if (!pv) throw new VolumeSourceError(`persistentvolume "${persistentVolumeName}" not found`);
    if (!pv.spec?.csi && isPVMigratable(pv)) {
      let translated: PersistentVolume;
      try {
        translated = translateInTreePVToCSI(pv);
      } catch (error) {
        throw new VolumeSourceError(
          `failed to translate in-tree PersistentVolume "${persistentVolumeName}" to CSI: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      const spec = translated.spec ?? {};
      if (spec.csi) return { pv, spec, csi: spec.csi, migrated: true };
    }
    const spec = pv.spec ?? {};
    if (!spec.csi) throw new VolumeSourceError("pv spec contained non-csi source that was not migrated");
    return { pv, spec, csi: spec.csi, migrated: false };
  }
  if (inlineVolumeSpec) {
    if (!inlineVolumeSpec.csi) throw new VolumeSourceError("inline volume spec contains nil CSI source");
    return { pv: undefined, spec: inlineVolumeSpec, csi: inlineVolumeSpec.csi, migrated: true };
  }
  throw new VolumeSourceError(
    "neither InlineCSIVolumeSource nor PersistentVolumeName specified in VA source",
  );
}

/** The one volume capability ControllerPublishVolume carries, from the PV spec. */
export function volumeCapability(
  spec: PersistentVolumeSpec,
  options: { singleNodeMultiWriter: boolean; defaultFsType: string },
): VolumeCapabilityInput {
  let mode;
  try {
    mode = csiAccessMode(spec.accessModes ?? [], options.singleNodeMultiWriter);
  } catch (error) {
    throw new VolumeSourceError(error instanceof Error ? error.message : String(error));
  }
  if (spec.volumeMode === "Block") return { block: {}, accessMode: { mode } };
  const fsType =
    spec.csi?.fsType !== undefined && spec.csi.fsType !== "" ? spec.csi.fsType : options.defaultFsType;
  return { mount: { fsType, mountFlags: spec.mountOptions ?? [] }, accessMode: { mode } };
}
