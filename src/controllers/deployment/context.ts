// What the Deployment sync functions work with: the client, the event recorder, the pod cache
// (Recreate waits for old pods), a logger, the reconcile's signal and the clock.

import type { Pod } from "../../api/index.ts";
import type { Logger } from "../../base/index.ts";
import type { EventRecorder, KubeClient, Store } from "../../kube/index.ts";

export interface DeploymentSyncContext {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  pods: Store<Pod>;
  now(): number;
}
