// kube-controller-manager's replicaset loop: keeps spec.replicas pods of each ReplicaSet.
export { startReplicaSetController, REPLICASET_CONTROLLER_COMPONENT } from "./controller.ts";
export type { ReplicaSetControllerOptions } from "./controller.ts";
export { REPLICASET_EVENTS, REPLICASET_KIND, BURST_REPLICAS } from "./sync.ts";
export { rankForDeletion } from "./rank.ts";
