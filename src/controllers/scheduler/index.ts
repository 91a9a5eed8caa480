// The volume-aware scheduler (kube-scheduler's role for a volume-only cluster): places pending
// pods on nodes through pods/binding, honouring node selection, taints, volume topology,
// WaitForFirstConsumer binding, storage capacity and attach limits.
export { startScheduler, DEFAULT_SCHEDULER_NAME, type SchedulerOptions } from "./controller.ts";
