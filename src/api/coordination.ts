// coordination.k8s.io/v1 Lease (leader election) and events.k8s.io/v1 Event.

import type { ObjectReference } from "./core.ts";
import type { KubeResource } from "./meta.ts";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** RFC 3339 with microseconds (MicroTime). */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  strategy?: string;
  preferredHolder?: string;
}

export interface Lease extends KubeResource {
  spec?: LeaseSpec;
}

/** events.k8s.io/v1 Event: the newer event shape (eventTime required, note instead of message). */
export interface EventsV1Event extends KubeResource {
  eventTime: string;
  series?: { count: number; lastObservedTime: string };
  reportingController?: string;
  reportingInstance?: string;
  action?: string;
  reason?: string;
  regarding?: ObjectReference;
  related?: ObjectReference;
  note?: string;
  type?: "Normal" | "Warning";
  deprecatedSource?: { component?: string; host?: string };
  deprecatedFirstTimestamp?: string;
  deprecatedLastTimestamp?: string;
  deprecatedCount?: number;
}
