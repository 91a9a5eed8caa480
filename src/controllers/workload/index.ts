// What the workload loops (statefulset, replicaset, deployment, daemonset, job) share: their
// wiring (loop.ts), pod predicates and builders, expectations, ownership (adopt/release), pod
// handlers, template hashes, IntOrString scaling, slow-start create batches and the owner status
// write.
export * from "./pods.ts";
export * from "./expectations.ts";
export * from "./ownership.ts";
export * from "./pod-events.ts";
export * from "./hash.ts";
export * from "./intstr.ts";
export * from "./selectors.ts";
export * from "./pod-control.ts";
export * from "./loop.ts";
export * from "./batches.ts";
export * from "./status.ts";
