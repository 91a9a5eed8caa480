// What `csikit doctor` works on: the inputs its collectors gather (API objects, the driver's
// backend listing, mounts and loop devices under node roots), the findings its pure checks
// derive from them, and the fixes a finding proposes. A finding without a fix is report-only:
// its `manual` says what a person should do instead.

import type {
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  VolumeAttachment,
  VolumeSnapshot,
  VolumeSnapshotContent,
} from "../api/index.ts";
import type { ListVolumesResponse_Entry, Snapshot } from "../csi/index.ts";

export type FindingKind =
  | "orphan-volume"
  | "orphan-snapshot"
  | "volume-missing"
  | "stuck-finalizer"
  | "attachment-to-deleted-node"
  | "orphan-mount"
  | "orphan-loop-device";

/** An API object a finding or fix names; `uid` pins a fix to the object the check saw. */
export interface ObjectRef {
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

export type FixAction =
  | { type: "delete-volume"; volumeId: string }
  | { type: "delete-snapshot"; snapshotId: string }
  | { type: "remove-finalizer"; target: ObjectRef; finalizer: string }
  | { type: "delete-object"; target: ObjectRef }
  | { type: "unmount"; path: string }
  | { type: "detach-loop"; device: string; backingFile: string };

export interface Fix {
  /** What the fix does, one line, e.g. "DeleteVolume vol-1". */
  description: string;
  action: FixAction;
}

export interface Finding {
  /** Stable across runs: kind plus what it is about (used to match a finding on a fresh pass). */
  id: string;
  kind: FindingKind;
  /** What the finding is about: "PersistentVolume pv-1", "backend volume <id>", "mount <path>". */
  object: string;
  /** Why it is a finding: what was observed. */
  why: string;
  /** The repair `--fix` would make; absent when doctor will not repair it. */
  fix?: Fix;
  /** Why there is no fix, or what to do by hand (report-only findings). */
  manual?: string;
}

/** The API objects the checks read (a list absent when its kind is not served, e.g. no snapshot CRDs). */
export interface ClusterState {
  persistentVolumes: PersistentVolume[];
  persistentVolumeClaims: PersistentVolumeClaim[];
  pods: Pod[];
  nodes: Node[];
  volumeAttachments: VolumeAttachment[];
  volumeSnapshots?: VolumeSnapshot[];
  volumeSnapshotContents?: VolumeSnapshotContent[];
}

/** What the driver's controller service says exists. A listing absent: the driver cannot list. */
export interface BackendState {
  driverName: string;
  volumes?: ListVolumesResponse_Entry[];
  snapshots?: Snapshot[];
  /** ListVolumes reports published_node_ids (LIST_VOLUMES_PUBLISHED_NODES). */
  publishedNodes: boolean;
}

export interface MountPoint {
  mountPoint: string;
  source: string;
  fsType: string;
}

export interface LoopDevice {
  /** /dev/loopN */
  device: string;
  /** As the kernel shows it; ends in " (deleted)" when the file was removed. */
  backingFile: string;
}

/** One node's kubelet root dir and what is mounted or looped under it. */
export interface NodeRootState {
  root: string;
  mounts: MountPoint[];
  loops: LoopDevice[];
}

export interface DoctorInputs {
  cluster: ClusterState;
  /** Absent without --csi-address. */
  backend?: BackendState;
  nodeRoots: NodeRootState[];
  /** Now, ms since the epoch (for the age of a deletion). */
  now: number;
  /** A deletion younger than this is in progress, not stuck. */
  minAgeMs: number;
}
