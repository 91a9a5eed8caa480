// PV/PVC access modes → the one CSI access mode, as csi-lib-utils' accessmodes package maps them
// (FACTS.md "Access-mode mapping"), shared by the sidecars that build volume capabilities (the
// provisioner from a claim, the attacher from a PV). Drivers advertising SINGLE_NODE_MULTI_WRITER
// get the finer-grained single-node modes.

import type { PersistentVolumeAccessMode } from "../api/index.ts";
import type { VolumeCapability_AccessMode_Mode } from "../csi/index.ts";

export class AccessModeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AccessModeError";
  }
}

export function csiAccessMode(
  modes: readonly PersistentVolumeAccessMode[],
  supportsSingleNodeMultiWriter: boolean,
): VolumeCapability_AccessMode_Mode {
  const set = new Set(modes);
  if (set.has("ReadWriteOncePod")) {
    if (set.size > 1)
      throw new AccessModeError("ReadWriteOncePod may not be combined with other access modes");
    return supportsSingleNodeMultiWriter ? "SINGLE_NODE_SINGLE_WRITER" : "SINGLE_NODE_WRITER";
  }
  if (set.has("ReadWriteMany")) return "MULTI_NODE_MULTI_WRITER";
  if (set.has("ReadOnlyMany") && set.has("ReadWriteOnce"))
    throw new AccessModeError(
      "CSI does not support ReadOnlyMany and ReadWriteOnce on the same PersistentVolume",
    );
  if (set.has("ReadOnlyMany")) return "MULTI_NODE_READER_ONLY";
  if (set.has("ReadWriteOnce"))
    return supportsSingleNodeMultiWriter ? "SINGLE_NODE_MULTI_WRITER" : "SINGLE_NODE_WRITER";
  throw new AccessModeError(`unsupported access modes ${JSON.stringify(modes)}`);
}
