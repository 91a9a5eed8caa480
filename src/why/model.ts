// The shapes `csikit why` passes between its three parts: the view the collector reads from the
// API server (objects in, nothing computed), and the chain of links the diagnosis makes of it
// (what is done, what waits, on whom, with which evidence and which command moves it on). The
// chain is also the `-o json` output, so its field names are a contract for tools.

import type {
  CSIDriver,
  CSINode,
  CoreEvent,
  Lease,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
  VolumeAttachment,
  VolumeAttributesClass,
  VolumeSnapshot,
  VolumeSnapshotClass,
  VolumeSnapshotContent,
} from "../api/index.ts";

export const TARGET_KINDS = ["pod", "pvc", "pv", "volumeattachment", "volumesnapshot"] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

export interface Target {
  kind: TargetKind;
  name: string;
  /** Namespaced kinds only (pod, pvc, volumesnapshot). */
  namespace?: string;
}

/** An object looked up by name: `object` is absent when the API server answered 404. */
export interface Lookup<T> {
  name: string;
  namespace?: string;
  object?: T;
}

/** A secret a class names for one CSI call, and whether it exists (its data is never read out). */
export interface SecretCheck {
  /** The class parameter that names it, e.g. csi.storage.k8s.io/provisioner-secret-name. */
  parameter: string;
  namespace: string;
  name: string;
  exists: boolean;
}

/** Everything the diagnosis looks at, read with GET/LIST only. */
export interface ClusterView {
  /** When the view was read (ISO 8601): lease expiry and event ages are measured against it. */
  now: string;
  target: Target;
  pod?: Lookup<Pod>;
  /** Pods in the claim's namespace that use the claim (a claim has no back-reference). */
  podsUsingClaim: Pod[];
  claim?: Lookup<PersistentVolumeClaim>;
  storageClass?: Lookup<StorageClass>;
  volumeAttributesClass?: Lookup<VolumeAttributesClass>;
  volume?: Lookup<PersistentVolume>;
  /** The node the pod runs on (or the attachment names). */
  node?: Lookup<Node>;
  /** Every node: topology and node-affinity checks count the nodes that fit. */
  nodes: Node[];
  csiNode?: Lookup<CSINode>;
  csiDriver?: Lookup<CSIDriver>;
  attachment?: Lookup<VolumeAttachment>;
  snapshot?: Lookup<VolumeSnapshot>;
  snapshotClass?: Lookup<VolumeSnapshotClass>;
  snapshotContent?: Lookup<VolumeSnapshotContent>;
  secrets: SecretCheck[];
  /** Leader-election Leases of the components the chain depends on (only those that exist). */
  leases: Lease[];
  /** Events whose involvedObject is one of the objects above. */
  events: CoreEvent[];
}

export type LinkState = "done" | "waiting" | "failed";

export type Step =
  | "deletion"
  | "claim"
  | "class"
  | "volume-attributes-class"
  | "provision"
  | "bind"
  | "modify"
  | "resize"
  | "schedule"
  | "node"
  | "driver-registration"
  | "attach"
  | "mount"
  | "pod"
  | "snapshot-class"
  | "snapshot-source"
  | "snapshot-content"
  | "snapshot-ready";

/** Who moves a link on: the component, and the finalizer or annotation through which it acts. */
export interface Responsible {
  component: string;
  finalizer?: string;
  annotation?: string;
}

export interface EventEvidence {
  /** kind/namespace/name of the involved object. */
  object: string;
  type: string;
  reason: string;
  message: string;
  count: number;
  /** Last time seen (ISO 8601), if the event says. */
  last?: string;
  source?: string;
}

export interface Link {
  step: Step;
  state: LinkState;
  /** The object the link is about, kind/namespace/name. */
  object?: string;
  /** One line: what is done, or what it waits for. */
  summary: string;
  /** Why it is not done, as precisely as the objects tell. */
  cause?: string;
  responsible?: Responsible;
  /** Other facts that bear on it (a status error, an expired lease, a missing secret). */
  details: string[];
  events: EventEvidence[];
  /** Commands that would show more or move it on, most useful first. */
  next: string[];
}

export interface Diagnosis {
  target: Target;
  /** The target's phase or state as the API shows it ("Pending", "Bound", "ready"...). */
  phase: string;
  /** True when every link is done. */
  done: boolean;
  /** The links in chain order, up to and including the first one not done. */
  links: Link[];
}
