// apps/v1 StatefulSet and ControllerRevision as they appear on the wire, with the fields the
// StatefulSet controller, kubectl's rollout commands and the tests read and write.

import type { KubeResource, LabelSelector, ObjectMeta } from "./meta.ts";
import type { PersistentVolumeClaimSpec, PersistentVolumeClaimStatus, PodSpec } from "./core.ts";

export type PersistentVolumeClaimRetentionPolicyType = "Retain" | "Delete";

export interface StatefulSetSpec {
  replicas?: number;
  selector: LabelSelector;
  template: { metadata?: ObjectMeta; spec?: PodSpec };
  volumeClaimTemplates?: {
    apiVersion?: string;
    kind?: string;
    metadata?: ObjectMeta;
    spec?: PersistentVolumeClaimSpec;
    status?: PersistentVolumeClaimStatus;
  }[];
  serviceName?: string;
  podManagementPolicy?: "OrderedReady" | "Parallel";
  updateStrategy?: {
    type?: "RollingUpdate" | "OnDelete";
    rollingUpdate?: { partition?: number; maxUnavailable?: number | string };
  };
  revisionHistoryLimit?: number;
  minReadySeconds?: number;
  persistentVolumeClaimRetentionPolicy?: {
    whenDeleted?: PersistentVolumeClaimRetentionPolicyType;
    whenScaled?: PersistentVolumeClaimRetentionPolicyType;
  };
  ordinals?: { start?: number };
}

export interface StatefulSetStatus {
  observedGeneration?: number;
  replicas?: number;
  readyReplicas?: number;
  currentReplicas?: number;
  updatedReplicas?: number;
  availableReplicas?: number;
  currentRevision?: string;
  updateRevision?: string;
  collisionCount?: number;
  conditions?: unknown[];
}

export interface StatefulSet extends KubeResource {
  spec?: StatefulSetSpec;
  status?: StatefulSetStatus;
}

export interface ControllerRevision extends KubeResource {
  /** The state this revision restores (for a StatefulSet: a patch replacing spec.template). */
  data?: unknown;
  revision: number;
}
