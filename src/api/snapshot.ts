// snapshot.storage.k8s.io/v1 (VolumeSnapshot, VolumeSnapshotContent, VolumeSnapshotClass),
// groupsnapshot.storage.k8s.io/v1 (VolumeGroupSnapshot and its content and class) and
// cbt.storage.k8s.io/v1beta1 (SnapshotMetadataService): the CRD kinds of external-snapshotter
// and external-snapshot-metadata, shared by the snapshot-controller, the snapshotter sidecar,
// the provisioner's restore path and the snapshot-metadata service.

import type { ObjectReference } from "./core.ts";
import type { KubeResource, LabelSelector, QuantityString } from "./meta.ts";

export type DeletionPolicy = "Delete" | "Retain";

/** A snapshot's error as the CRDs carry it: when and what (never a secret). */
export interface SnapshotError {
  time?: string;
  message?: string;
}

export interface VolumeSnapshotSource {
  /** Dynamic: the claim to snapshot (same namespace). */
  persistentVolumeClaimName?: string;
  /** Pre-provisioned: the existing content to bind. */
  volumeSnapshotContentName?: string;
}

export interface VolumeSnapshotSpec {
  source: VolumeSnapshotSource;
  volumeSnapshotClassName?: string;
}

export interface VolumeSnapshotStatus {
  boundVolumeSnapshotContentName?: string;
  creationTime?: string;
  readyToUse?: boolean;
  restoreSize?: QuantityString;
  error?: SnapshotError;
  /** Set when the snapshot is a member of a group snapshot. */
  volumeGroupSnapshotName?: string;
}

export interface VolumeSnapshot extends KubeResource {
  spec: VolumeSnapshotSpec;
  status?: VolumeSnapshotStatus;
}

export interface VolumeSnapshotContentSource {
  /** Dynamic: the CSI volume to snapshot. */
  volumeHandle?: string;
  /** Pre-provisioned: the backend snapshot. */
  snapshotHandle?: string;
}

export interface VolumeSnapshotContentSpec {
  volumeSnapshotRef: ObjectReference;
  deletionPolicy: DeletionPolicy;
  driver: string;
  volumeSnapshotClassName?: string;
  source: VolumeSnapshotContentSource;
  sourceVolumeMode?: "Filesystem" | "Block";
}

export interface VolumeSnapshotContentStatus {
  snapshotHandle?: string;
  /** Nanoseconds since the epoch (int64 on the wire). */
  creationTime?: number;
  /** Bytes (int64 on the wire). */
  restoreSize?: number;
  readyToUse?: boolean;
  error?: SnapshotError;
  volumeGroupSnapshotHandle?: string;
}

export interface VolumeSnapshotContent extends KubeResource {
  spec: VolumeSnapshotContentSpec;
  status?: VolumeSnapshotContentStatus;
}

export interface VolumeSnapshotClass extends KubeResource {
  driver: string;
  parameters?: Record<string, string>;
  deletionPolicy: DeletionPolicy;
}

export interface VolumeGroupSnapshotSource {
  /** Dynamic: the claims (same namespace) whose labels match. */
  selector?: LabelSelector;
  /** Pre-provisioned: the existing group content to bind. */
  volumeGroupSnapshotContentName?: string;
}

export interface VolumeGroupSnapshotSpec {
  source: VolumeGroupSnapshotSource;
  volumeGroupSnapshotClassName?: string;
}

export interface VolumeGroupSnapshotStatus {
  boundVolumeGroupSnapshotContentName?: string;
  creationTime?: string;
  readyToUse?: boolean;
  error?: SnapshotError;
}

export interface VolumeGroupSnapshot extends KubeResource {
  spec: VolumeGroupSnapshotSpec;
  status?: VolumeGroupSnapshotStatus;
}

export interface GroupSnapshotHandles {
  volumeGroupSnapshotHandle: string;
  volumeSnapshotHandles: string[];
}

export interface VolumeGroupSnapshotContentSource {
  /** Dynamic: the CSI volumes to snapshot together. */
  volumeHandles?: string[];
  /** Pre-provisioned: the backend group snapshot and its members. */
  groupSnapshotHandles?: GroupSnapshotHandles;
}

export interface VolumeGroupSnapshotContentSpec {
  volumeGroupSnapshotRef: ObjectReference;
  deletionPolicy: DeletionPolicy;
  driver: string;
  volumeGroupSnapshotClassName?: string;
  source: VolumeGroupSnapshotContentSource;
}

/** One member of a group snapshot (v1beta2+; v1beta1 had volumeSnapshotHandlePairList). */
export interface VolumeSnapshotInfo {
  volumeHandle?: string;
  snapshotHandle?: string;
  /** Nanoseconds since the epoch. */
  creationTime?: number;
  readyToUse?: boolean;
  /** Bytes. */
  restoreSize?: number;
}

export interface VolumeGroupSnapshotContentStatus {
  volumeGroupSnapshotHandle?: string;
  /** RFC 3339 time (a metav1.Time in v1beta2+; int64 nanoseconds in v1beta1). */
  creationTime?: string;
  readyToUse?: boolean;
  error?: SnapshotError;
  volumeSnapshotInfoList?: VolumeSnapshotInfo[];
}

export interface VolumeGroupSnapshotContent extends KubeResource {
  spec: VolumeGroupSnapshotContentSpec;
  status?: VolumeGroupSnapshotContentStatus;
}

export interface VolumeGroupSnapshotClass extends KubeResource {
  driver: string;
  parameters?: Record<string, string>;
  deletionPolicy: DeletionPolicy;
}

/** cbt.storage.k8s.io/v1beta1: where a driver's SnapshotMetadata service listens. */
export interface SnapshotMetadataService extends KubeResource {
  spec: {
    /** host:port of the TLS gRPC service. */
    address: string;
    /** Base64 PEM of the CA that signed the service's certificate. */
    caCert: string;
    /** The audience a caller's ServiceAccount token must carry. */
    audience: string;
  };
}
