// The volume-aware scheduler (kube-scheduler's role for a volume-only cluster): places pending
// pods on nodes through pods/binding, honouring node selection, taints, volume topology,
// WaitForFirstConsumer binding, storage capacity and attach limits.
export { startScheduler, DEFAULT_SCHEDULER_NAME, type SchedulerOptions } from "./controller.ts";
// The scheduler's node predicates, which the DaemonSet loop evaluates as upstream's daemon
// controller does (nodeSelector, required node affinity, taints).
export { podFitsNodeAffinity, firstUntoleratedTaint, toleratesTaint } from "./node-selector.ts";
