// The volume loops of kube-controller-manager: the PV binder (persistentvolume-binder-controller)
// and the pvc/pv protection finalizer controllers.
export { startPersistentVolumeController, PV_CONTROLLER_COMPONENT } from "./controller.ts";
export type { PersistentVolumeControllerOptions } from "./controller.ts";
export { startPvcProtectionController, podUsesClaim } from "./pvc-protection.ts";
export type { ProtectionControllerOptions } from "./pvc-protection.ts";
export { startPvProtectionController } from "./pv-protection.ts";
export { startVacProtectionController } from "./vac-protection.ts";
export { findBestMatchForClaim, volumeNodeAffinityMatches, nodeSelectorTermMatches } from "./match.ts";
