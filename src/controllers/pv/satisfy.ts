// Whether a volume a claim names in spec.volumeName can serve it (upstream
// checkVolumeSatisfyClaim): the reason it cannot, as the VolumeMismatch Event says it, or
// undefined when it fits. Pure.

import { compareQuantities, type PersistentVolume, type PersistentVolumeClaim } from "../../api/index.ts";
import { accessModesContain, claimClass, storageQuantity, volumeClass, volumeModeMismatch } from "./match.ts";

function reason(volume: PersistentVolume, claim: PersistentVolumeClaim): string | undefined {
  if (volume.metadata?.deletionTimestamp)
    return `the volume is marked for deletion "${volume.metadata.name}"`;
  if (
    compareQuantities(
      storageQuantity(volume.spec?.capacity),
      storageQuantity(claim.spec?.resources?.requests),
    ) < 0
  )
    return "requested PV is too small";
  if (volumeClass(volume) !== claimClass(claim)) return "storageClassName does not match";
  if (volumeModeMismatch(claim, volume)) return "incompatible volumeMode";
  if (!accessModesContain(volume.spec?.accessModes, claim.spec?.accessModes ?? []))
    return "incompatible accessMode";
  return undefined;
}

export function checkVolumeSatisfiesClaim(
  volume: PersistentVolume,
  claim: PersistentVolumeClaim,
): string | undefined {
  const why = reason(volume, claim);
  return why === undefined ? undefined : `Cannot bind to requested volume "${volume.metadata?.name}": ${why}`;
}
