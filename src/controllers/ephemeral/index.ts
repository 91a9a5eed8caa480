// kube-controller-manager's ephemeral-volume-controller: the claim of each generic ephemeral
// volume, owned by its pod.
export { startEphemeralVolumeController, EPHEMERAL_VOLUME_COMPONENT } from "./controller.ts";
export type { EphemeralVolumeControllerOptions } from "./controller.ts";
export { ephemeralClaim } from "./sync.ts";
