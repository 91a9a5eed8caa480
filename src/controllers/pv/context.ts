// What the PV controller's sync functions work with: the latest known volumes and claims
// (cache plus our own writes), the other caches they read, the event recorder and the client.
// Built once by controller.ts; sync-claim.ts and sync-volume.ts only see this interface.

import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from "../../api/index.ts";
import type { EventRecorder, KubeClient, Store } from "../../kube/index.ts";
import type { Logger } from "../../base/index.ts";
import type { LatestObjects } from "../common/index.ts";
import type { FeatureGates } from "../../migration/index.ts";

export { POD_CLAIM_INDEX } from "../common/index.ts";

export interface PvSyncContext {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  volumes: LatestObjects<PersistentVolume>;
  claims: LatestObjects<PersistentVolumeClaim>;
  classes: Store<StorageClass>;
  pods: Store<Pod>;
  nodes: Store<Node>;
  /** CSI migration gates (kube-controller-manager's --feature-gates). */
  featureGates: FeatureGates;
  enqueueClaim(key: string): void;
  enqueueVolume(name: string): void;
  now(): number;
}
