// kube-controller-manager's daemonset loop: one pod per matching node, following nodes.
export { startDaemonSetController, DAEMONSET_CONTROLLER_COMPONENT } from "./controller.ts";
export type { DaemonSetControllerOptions } from "./controller.ts";
export { DAEMONSET_EVENTS } from "./sync.ts";
export { nodeShouldRunDaemonPod, daemonPodNode } from "./predicates.ts";
