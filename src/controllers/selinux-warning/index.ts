// kube-controller-manager's selinux-warning-controller: events (and a metric) for pods that
// share a volume with SELinux labels or change policies that cannot both be mounted.
export {
  startSELinuxWarningController,
  SELINUX_WARNING_COMPONENT,
  SELINUX_WARNING_CONTROLLER,
} from "./controller.ts";
export type { SELinuxWarningControllerOptions } from "./controller.ts";
export { VolumeLabelCache, conflictMessage, type Conflict } from "./cache.ts";
export { fileLabel, labelsConflict } from "./labels.ts";
