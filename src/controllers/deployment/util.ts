// Pure helpers of the Deployment loop (upstream's pkg/controller/deployment/util): revisions,
// the new ReplicaSet of a template, replica sums, surge/unavailable bounds, conditions and the
// complete/progressing/timed-out tests kubectl's rollout status mirrors.

import {
  WORKLOAD_NAMES,
  type Deployment,
  type PodTemplateSpec,
  type ReplicaSet,
  type WorkloadCondition,
} from "../../api/index.ts";
import { jsonEqual } from "../../base/index.ts";
import { resolveFenceposts, timestamp } from "../workload/index.ts";

export const DEPLOYMENT_KIND = { apiVersion: "apps/v1", kind: "Deployment" } as const;

/** Condition reasons, as upstream's deploymentutil constants. */
export const DEPLOYMENT_REASONS = Object.freeze({
  newReplicaSetCreated: "NewReplicaSetCreated",
  foundNewReplicaSet: "FoundNewReplicaSet",
  newRSAvailable: "NewReplicaSetAvailable",
  replicaSetUpdated: "ReplicaSetUpdated",
  timedOut: "ProgressDeadlineExceeded",
  pausedDeploy: "DeploymentPaused",
  resumedDeploy: "DeploymentResumed",
  minimumReplicasAvailable: "MinimumReplicasAvailable",
  minimumReplicasUnavailable: "MinimumReplicasUnavailable",
  failedRSCreate: "ReplicaSetCreateError",
});

export const DEPLOYMENT_EVENTS = Object.freeze({
  scalingReplicaSet: "ScalingReplicaSet",
  deploymentRollback: "DeploymentRollback",
});

export function replicasOf(object: { spec?: { replicas?: number } } | undefined): number {
  return object?.spec?.replicas ?? 0;
}

export function revisionOf(rs: ReplicaSet): number {
  const value = Number(rs.metadata?.annotations?.[WORKLOAD_NAMES.revisionAnnotation] ?? "0");
  return Number.isInteger(value) ? value : 0;
}

export function maxRevision(list: readonly ReplicaSet[]): number {
  return list.reduce((max, rs) => Math.max(max, revisionOf(rs)), 0);
}

/** JSON without null members: Go decodes `creationTimestamp: null` (kubectl sends it) as the zero value. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) if (member !== null) out[key] = withoutNulls(member);
  return out;
}

function withoutHash(template: PodTemplateSpec | undefined): PodTemplateSpec {
  const copy = withoutNulls(structuredClone(template ?? {})) as PodTemplateSpec;
  if (copy.metadata?.labels) {
    delete copy.metadata.labels[WORKLOAD_NAMES.podTemplateHashLabel];
    if (Object.keys(copy.metadata.labels).length === 0) delete copy.metadata.labels;
  }
  return copy;
}

/** EqualIgnoreHash: the templates are the same apart from the pod-template-hash label. */
export function equalIgnoreHash(a: PodTemplateSpec | undefined, b: PodTemplateSpec | undefined): boolean {
  return jsonEqual(withoutHash(a), withoutHash(b));
}

function byCreation(a: ReplicaSet, b: ReplicaSet): number {
  const ta = Date.parse(a.metadata?.creationTimestamp ?? "") || 0;
  const tb = Date.parse(b.metadata?.creationTimestamp ?? "") || 0;
  if (ta !== tb) return ta - tb;
  return (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1;
}

export function oldestFirst(list: readonly ReplicaSet[]): ReplicaSet[] {
  return [...list].sort(byCreation);
}

/** FindNewReplicaSet: the oldest ReplicaSet whose template is the Deployment's. */
export function findNewReplicaSet(d: Deployment, list: readonly ReplicaSet[]): ReplicaSet | undefined {
  return oldestFirst(list).find((rs) => equalIgnoreHash(rs.spec?.template, d.spec?.template));
}

export function sumSpecReplicas(list: readonly (ReplicaSet | undefined)[]): number {
  return list.reduce((sum, rs) => sum + (rs ? replicasOf(rs) : 0), 0);
}

export function sumStatus(
  list: readonly (ReplicaSet | undefined)[],
  field: "replicas" | "readyReplicas" | "availableReplicas",
): number {
  return list.reduce((sum, rs) => sum + (rs?.status?.[field] ?? 0), 0);
}

export function isRollingUpdate(d: Deployment): boolean {
  return (d.spec?.strategy?.type ?? "RollingUpdate") === "RollingUpdate";
}

/** MaxSurge: the resolved surge of a rolling Deployment (0 otherwise). */
export function maxSurge(d: Deployment): number {
  if (!isRollingUpdate(d)) return 0;
  const rolling = d.spec?.strategy?.rollingUpdate;
  return resolveFenceposts(rolling?.maxSurge ?? "25%", rolling?.maxUnavailable ?? "25%", replicasOf(d)).surge;
}

/** MaxUnavailable: the resolved bound, never above spec.replicas. */
export function maxUnavailable(d: Deployment): number {
  if (!isRollingUpdate(d) || replicasOf(d) === 0) return 0;
  const rolling = d.spec?.strategy?.rollingUpdate;
  const { unavailable } = resolveFenceposts(
    rolling?.maxSurge ?? "25%",
    rolling?.maxUnavailable ?? "25%",
    replicasOf(d),
  );
  return Math.min(unavailable, replicasOf(d));
}

export type DeploymentStatus = NonNullable<Deployment["status"]>;

export function getCondition(
  status: DeploymentStatus | undefined,
  type: string,
): WorkloadCondition | undefined {
  return status?.conditions?.find((condition) => condition.type === type);
}

export function newCondition(
  type: string,
  status: WorkloadCondition["status"],
  reason: string,
  message: string,
  now: number,
): WorkloadCondition {
  const at = timestamp(now);
  return { type, status, lastUpdateTime: at, lastTransitionTime: at, reason, message };
}

/** SetDeploymentCondition: same status and reason → unchanged; same status → keeps the transition time. */
export function setCondition(status: DeploymentStatus, condition: WorkloadCondition): void {
  const current = getCondition(status, condition.type);
  if (current && current.status === condition.status && current.reason === condition.reason) return;
  const next = { ...condition };
  if (current && current.status === condition.status && current.lastTransitionTime)
    next.lastTransitionTime = current.lastTransitionTime;
  status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== condition.type), next];
}

export function removeCondition(status: DeploymentStatus, type: string): void {
  const rest = (status.conditions ?? []).filter((c) => c.type !== type);
  if (rest.length > 0) status.conditions = rest;
  else delete status.conditions;
}

/** DeploymentComplete. */
export function deploymentComplete(d: Deployment, status: DeploymentStatus): boolean {
  const replicas = replicasOf(d);
  return (
    (status.updatedReplicas ?? 0) === replicas &&
    (status.replicas ?? 0) === replicas &&
    (status.availableReplicas ?? 0) === replicas &&
    (status.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0)
  );
}

/** DeploymentProgressing: more updated, fewer old, more ready or more available than before. */
export function deploymentProgressing(d: Deployment, status: DeploymentStatus): boolean {
  const old = d.status ?? {};
  const oldOld = (old.replicas ?? 0) - (old.updatedReplicas ?? 0);
  const newOld = (status.replicas ?? 0) - (status.updatedReplicas ?? 0);
  return (
    (status.updatedReplicas ?? 0) > (old.updatedReplicas ?? 0) ||
    newOld < oldOld ||
    (status.readyReplicas ?? 0) > (old.readyReplicas ?? 0) ||
    (status.availableReplicas ?? 0) > (old.availableReplicas ?? 0)
  );
}

/** DeploymentTimedOut: the Progressing condition was last updated longer than the deadline ago. */
export function deploymentTimedOut(d: Deployment, status: DeploymentStatus, now: number): boolean {
  const deadline = d.spec?.progressDeadlineSeconds;
  if (deadline === undefined || deadline === 2147483647) return false;
  const condition = getCondition(status, "Progressing");
  if (condition === undefined) return false;
  if (condition.reason === DEPLOYMENT_REASONS.timedOut) return true;
  const from = Date.parse(condition.lastUpdateTime ?? "");
  return !Number.isNaN(from) && from + deadline * 1000 < now;
}

export function hasProgressDeadline(d: Deployment): boolean {
  const deadline = d.spec?.progressDeadlineSeconds;
  return deadline !== undefined && deadline !== 2147483647;
}

/** Annotations upstream never copies from a Deployment to its ReplicaSets. */
const SKIPPED_ANNOTATIONS = new Set<string>([
  WORKLOAD_NAMES.lastAppliedAnnotation,
  WORKLOAD_NAMES.revisionAnnotation,
  WORKLOAD_NAMES.revisionHistoryAnnotation,
  WORKLOAD_NAMES.desiredReplicasAnnotation,
  WORKLOAD_NAMES.maxReplicasAnnotation,
  "deprecated.deployment.rollback.to",
]);

/** copyDeploymentAnnotationsToReplicaSet; true when something changed. */
export function copyAnnotations(d: Deployment, annotations: Record<string, string>): boolean {
  let changed = false;
  for (const [key, value] of Object.entries(d.metadata?.annotations ?? {})) {
    if (SKIPPED_ANNOTATIONS.has(key) || annotations[key] === value) continue;
    annotations[key] = value;
    changed = true;
  }
  return changed;
}

/** SetNewReplicaSetAnnotations' revision part: bumps the revision, keeping the history. */
export function setRevision(annotations: Record<string, string>, newRevision: number): boolean {
  const current = annotations[WORKLOAD_NAMES.revisionAnnotation];
  const old = Number(current ?? "0");
  if (current !== undefined && old >= newRevision) return false;
  annotations[WORKLOAD_NAMES.revisionAnnotation] = String(newRevision);
  if (current !== undefined && current !== "") {
    const history = annotations[WORKLOAD_NAMES.revisionHistoryAnnotation];
    annotations[WORKLOAD_NAMES.revisionHistoryAnnotation] = history ? `${history},${current}` : current;
  }
  return true;
}

/** SetReplicasAnnotations: desired-replicas and max-replicas; true when changed. */
export function setReplicasAnnotations(
  annotations: Record<string, string>,
  desired: number,
  max: number,
): boolean {
  let changed = false;
  if (annotations[WORKLOAD_NAMES.desiredReplicasAnnotation] !== String(desired)) {
    annotations[WORKLOAD_NAMES.desiredReplicasAnnotation] = String(desired);
    changed = true;
  }
  if (annotations[WORKLOAD_NAMES.maxReplicasAnnotation] !== String(max)) {
    annotations[WORKLOAD_NAMES.maxReplicasAnnotation] = String(max);
    changed = true;
  }
  return changed;
}
