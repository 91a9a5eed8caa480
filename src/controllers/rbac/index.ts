// RBAC loops of kube-controller-manager: ClusterRole aggregation.
export { aggregatedRules, startClusterRoleAggregationController } from "./aggregation.ts";
export type { AggregationControllerOptions } from "./aggregation.ts";
