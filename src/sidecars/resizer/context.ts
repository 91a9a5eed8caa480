// What every resizer reconcile shares: clients, caches, the driver's capabilities, options and
// the in-memory bookkeeping upstream keeps too (final-error claims, the slow-retry sets, claims
// whose expansion failed because the volume was in use, modifications of uncertain outcome).
// None of it is needed for safety after a restart: the claim's status (allocatedResources and
// allocatedResourceStatuses) is the durable intent; the sets only pace retries.

import type { PersistentVolume, PersistentVolumeClaim, VolumeAttributesClass } from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";
import type { EventRecorder, KubeClient, Informer } from "../../kube/index.ts";
import type { ResizerDriverInfo } from "./driver.ts";
import type { ResizerOptions } from "./options.ts";
import { SlowSet } from "./slow-set.ts";

export interface ResizerState {
  /** Claims whose last controller expansion failed with a final error: a lowered request may be tried. */
  finalErrorClaims: Set<string>;
  /** Claims whose expansion was infeasible: retried only after --retry-interval-max. */
  slowResize: SlowSet;
  /** Claims whose expansion failed with FAILED_PRECONDITION (volume in use, driver offline-only). */
  inUseErrors: Set<string>;
  /** Claims whose ControllerModifyVolume failed with a non-final error: the target must not change. */
  uncertainModify: Set<string>;
  /** Claims whose modification was infeasible. */
  slowModify: SlowSet;
}

export function newResizerState(clock: Clock, retryIntervalMaxMs: number): ResizerState {
  return {
    finalErrorClaims: new Set(),
    slowResize: new SlowSet(clock, retryIntervalMaxMs),
    inUseErrors: new Set(),
    uncertainModify: new Set(),
    slowModify: new SlowSet(clock, retryIntervalMaxMs),
  };
}

export interface ResizerContext {
  client: KubeClient;
  csi: CsiClient;
  driver: ResizerDriverInfo;
  options: ResizerOptions;
  claims: Informer<PersistentVolumeClaim>;
  volumes: Informer<PersistentVolume>;
  /** Present when the modify controller runs. */
  attributeClasses: Informer<VolumeAttributesClass> | undefined;
  events: EventRecorder;
  logger: Logger;
  clock: Clock;
  state: ResizerState;
}
