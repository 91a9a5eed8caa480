// What the health monitor's sync modules share: the driver, its CSI connection, the informer
// stores they read, the event recorder they write to, and the options.

import type { Clock, Logger } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod } from "../../api/index.ts";
import type { EventRecorder, Informer } from "../../kube/index.ts";
import type { HealthMonitorDriverInfo } from "./driver.ts";
import type { HealthMonitorOptions } from "./options.ts";

export interface HealthMonitorContext {
  driver: HealthMonitorDriverInfo;
  csi: CsiClient;
  options: HealthMonitorOptions;
  volumes: Informer<PersistentVolume>;
  claims: Informer<PersistentVolumeClaim>;
  /** Only with the node watcher (upstream watches pods and nodes only then). */
  pods?: Informer<Pod>;
  nodes?: Informer<Node>;
  events: EventRecorder;
  logger: Logger;
  clock: Clock;
}
