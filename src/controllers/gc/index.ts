// The garbage collector of ownerReferences (kube-controller-manager's garbage-collector-controller).
export { startGarbageCollector, FOREGROUND_FINALIZER, ORPHAN_FINALIZER } from "./controller.ts";
export type { GarbageCollectorOptions } from "./controller.ts";
export { discoverDeletableResources } from "./discovery.ts";
