// The control-plane loops a real cluster runs for volumes (kube-controller-manager's share):
// PV binder, pvc/pv protection, garbage collector, attach/detach, plus the volume-aware
// scheduler (kube-scheduler's share), and the composition root that runs them.
export * from "./pv/index.ts";
export * from "./gc/index.ts";
export * from "./attachdetach/index.ts";
export * from "./scheduler/index.ts";
export * from "./rbac/index.ts";
export * from "./statefulset/index.ts";
export * from "./ephemeral/index.ts";
export * from "./replicaset/index.ts";
export * from "./deployment/index.ts";
export * from "./daemonset/index.ts";
export * from "./job/index.ts";
export * from "./run.ts";
export * from "./metrics.ts";
export * from "./snapshot/index.ts";
