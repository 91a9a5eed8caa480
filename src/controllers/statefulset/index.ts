// kube-controller-manager's statefulset-controller: ordinals, OrderedReady/Parallel, claims from
// volumeClaimTemplates, the retention policy as owner references, rolling update by partition,
// ControllerRevision history.
export { startStatefulSetController, STATEFULSET_CONTROLLER_COMPONENT } from "./controller.ts";
export type { StatefulSetControllerOptions } from "./controller.ts";
export { STATEFULSET_LABELS } from "./identity.ts";
