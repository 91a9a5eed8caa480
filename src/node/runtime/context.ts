// What the runtime needs of the node it runs in (the node's NodeContext fits): kept apart so the
// runtime does not reach back into the node's own modules.

import type { Clock, Logger } from "../../base/index.ts";
import type { EventRecorder, KubeClient } from "../../kube/index.ts";

export interface RuntimeContext {
  nodeName: string;
  /** The kubelet's layout: <root>/pods/<uid> holds the pod's volumes. */
  paths: { readonly root: string; podDir(podUID: string): string };
  client: KubeClient;
  events: EventRecorder;
  clock: Clock;
  logger: Logger;
}
