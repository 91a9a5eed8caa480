// kube-controller-manager's deployment loop: ReplicaSets per template revision, rolling
// updates within maxSurge/maxUnavailable, Recreate, history cleanup, Available/Progressing.
export { startDeploymentController, DEPLOYMENT_CONTROLLER_COMPONENT } from "./controller.ts";
export type { DeploymentControllerOptions } from "./controller.ts";
export { DEPLOYMENT_EVENTS, DEPLOYMENT_REASONS, equalIgnoreHash, revisionOf } from "./util.ts";
