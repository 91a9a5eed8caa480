// apps/v1 ReplicaSet, Deployment and DaemonSet and batch/v1 Job and CronJob as they appear on
// the wire, plus the names kube-controller-manager's workload loops put on objects (labels,
// annotations, finalizers). Only the fields csikit's controllers read or write are typed; the
// rest pass through untouched.

import type { KubeResource, LabelSelector, ObjectMeta } from "./meta.ts";
import type { PodSpec } from "./core.ts";

export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec?: PodSpec;
}

/** apps/v1 and batch/v1 conditions (lastUpdateTime only on Deployments). */
export interface WorkloadCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastUpdateTime?: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface ReplicaSet extends KubeResource {
  spec?: {
    replicas?: number;
    minReadySeconds?: number;
    selector?: LabelSelector;
    template?: PodTemplateSpec;
  };
  status?: {
    replicas?: number;
    fullyLabeledReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    terminatingReplicas?: number;
    observedGeneration?: number;
    conditions?: WorkloadCondition[];
  };
}

/** An int or a percentage ("25%"), as maxSurge/maxUnavailable. */
export type IntOrString = number | string;

export interface Deployment extends KubeResource {
  spec?: {
    replicas?: number;
    selector?: LabelSelector;
    template?: PodTemplateSpec;
    strategy?: {
      type?: "Recreate" | "RollingUpdate";
      rollingUpdate?: { maxUnavailable?: IntOrString; maxSurge?: IntOrString };
    };
    minReadySeconds?: number;
    revisionHistoryLimit?: number;
    paused?: boolean;
    progressDeadlineSeconds?: number;
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    unavailableReplicas?: number;
    terminatingReplicas?: number;
    conditions?: WorkloadCondition[];
    collisionCount?: number;
  };
}

export interface DaemonSet extends KubeResource {
  spec?: {
    selector?: LabelSelector;
    template?: PodTemplateSpec;
    updateStrategy?: {
      type?: "RollingUpdate" | "OnDelete";
      rollingUpdate?: { maxUnavailable?: IntOrString; maxSurge?: IntOrString };
    };
    minReadySeconds?: number;
    revisionHistoryLimit?: number;
  };
  status?: {
    currentNumberScheduled?: number;
    numberMisscheduled?: number;
    desiredNumberScheduled?: number;
    numberReady?: number;
    observedGeneration?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
    numberUnavailable?: number;
    collisionCount?: number;
    conditions?: WorkloadCondition[];
  };
}

export interface Job extends KubeResource {
  spec?: {
    parallelism?: number;
    completions?: number;
    activeDeadlineSeconds?: number;
    backoffLimit?: number;
    backoffLimitPerIndex?: number;
    selector?: LabelSelector;
    manualSelector?: boolean;
    template?: PodTemplateSpec;
    ttlSecondsAfterFinished?: number;
    completionMode?: "NonIndexed" | "Indexed";
    suspend?: boolean;
    podReplacementPolicy?: "TerminatingOrFailed" | "Failed";
    /** Not acted on by csikit (only its presence changes which pods count as failed). */
    podFailurePolicy?: unknown;
  };
  status?: {
    conditions?: WorkloadCondition[];
    startTime?: string;
    completionTime?: string;
    active?: number;
    succeeded?: number;
    failed?: number;
    terminating?: number;
    ready?: number;
    completedIndexes?: string;
    uncountedTerminatedPods?: { succeeded?: string[]; failed?: string[] };
  };
}

export interface CronJob extends KubeResource {
  spec?: {
    schedule?: string;
    timeZone?: string;
    startingDeadlineSeconds?: number;
    concurrencyPolicy?: "Allow" | "Forbid" | "Replace";
    suspend?: boolean;
    jobTemplate?: { metadata?: ObjectMeta; spec?: Job["spec"] };
    successfulJobsHistoryLimit?: number;
    failedJobsHistoryLimit?: number;
  };
  status?: { active?: unknown[]; lastScheduleTime?: string; lastSuccessfulTime?: string };
}

/** Names kube-controller-manager's workload loops write, as upstream spells them. */
export const WORKLOAD_NAMES = Object.freeze({
  /** Label the Deployment controller puts on its ReplicaSets and their pods (apps/v1 DefaultDeploymentUniqueLabelKey). */
  podTemplateHashLabel: "pod-template-hash",
  /** ReplicaSet annotation: the rollout revision (kubectl rollout history reads it). */
  revisionAnnotation: "deployment.kubernetes.io/revision",
  /** ReplicaSet annotation: revisions this template had before (a rollback reuses an old ReplicaSet). */
  revisionHistoryAnnotation: "deployment.kubernetes.io/revision-history",
  desiredReplicasAnnotation: "deployment.kubernetes.io/desired-replicas",
  maxReplicasAnnotation: "deployment.kubernetes.io/max-replicas",
  /** kubectl's change-cause annotation, copied from the Deployment to its new ReplicaSet. */
  changeCauseAnnotation: "kubernetes.io/change-cause",
  /** kubectl's last-applied annotation, never copied to ReplicaSets. */
  lastAppliedAnnotation: "kubectl.kubernetes.io/last-applied-configuration",
  /** DaemonSet pods: the hash of the template revision they were created from. */
  controllerRevisionHashLabel: "controller-revision-hash",
  /** Job pod labels (the batch.kubernetes.io forms and the legacy ones). */
  jobNameLabel: "batch.kubernetes.io/job-name",
  legacyJobNameLabel: "job-name",
  controllerUidLabel: "batch.kubernetes.io/controller-uid",
  legacyControllerUidLabel: "controller-uid",
  /** Finalizer the Job controller keeps on its pods until it counted them in the Job's status. */
  jobTrackingFinalizer: "batch.kubernetes.io/job-tracking",
  /** Taints the node lifecycle puts on a node that the DaemonSet controller's pods tolerate. */
  nodeNotReadyTaint: "node.kubernetes.io/not-ready",
  nodeUnreachableTaint: "node.kubernetes.io/unreachable",
  nodeDiskPressureTaint: "node.kubernetes.io/disk-pressure",
  nodeMemoryPressureTaint: "node.kubernetes.io/memory-pressure",
  nodePidPressureTaint: "node.kubernetes.io/pid-pressure",
  nodeUnschedulableTaint: "node.kubernetes.io/unschedulable",
  nodeNetworkUnavailableTaint: "node.kubernetes.io/network-unavailable",
});
