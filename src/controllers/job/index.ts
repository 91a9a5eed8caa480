// kube-controller-manager's job loop: completions, parallelism, backoffLimit, pod tracking
// finalizers and the Complete/Failed conditions.
export { startJobController, JOB_CONTROLLER_COMPONENT } from "./controller.ts";
export type { JobControllerOptions } from "./controller.ts";
export { JOB_EVENTS, JOB_REASONS, isJobFinished } from "./sync.ts";
