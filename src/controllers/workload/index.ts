// What the workload loops (replicaset, deployment, daemonset, job) share: pod predicates and
// builders, expectations, ownership (adopt/release), pod handlers, template hashes and
// IntOrString scaling.
export * from "./pods.ts";
export * from "./expectations.ts";
export * from "./ownership.ts";
export * from "./pod-events.ts";
export * from "./hash.ts";
export * from "./intstr.ts";
export * from "./selectors.ts";
export * from "./pod-control.ts";
