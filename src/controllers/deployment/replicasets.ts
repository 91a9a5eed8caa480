// The Deployment loop's writes to ReplicaSets (upstream's sync.go): find or create the new
// ReplicaSet of the current template (`<deployment>-<pod-template-hash>`, revision = highest
// old revision + 1), keep its revision and replica annotations current, and scale a
// ReplicaSet with the ScalingReplicaSet event kubectl describe shows.

import { GVR, WORKLOAD_NAMES, type Deployment, type ReplicaSet } from "../../api/index.ts";
import { jsonEqual } from "../../base/index.ts";
import { isAlreadyExists, objectKey } from "../../kube/index.ts";
import { computeHash, newControllerRef, controllerOf } from "../workload/index.ts";
import type { DeploymentSyncContext } from "./context.ts";
import {
  DEPLOYMENT_EVENTS,
  DEPLOYMENT_KIND,
  DEPLOYMENT_REASONS,
  copyAnnotations,
  equalIgnoreHash,
  findNewReplicaSet,
  getCondition,
  maxRevision,
  maxSurge,
  newCondition,
  replicasOf,
  setCondition,
  setReplicasAnnotations,
  setRevision,
  sumSpecReplicas,
  type DeploymentStatus,
} from "./util.ts";

export interface ReplicaSetsOfDeployment {
  newRS: ReplicaSet | undefined;
  oldRSs: ReplicaSet[];
}

/** The Deployment's revision annotation follows its new ReplicaSet's (SetDeploymentRevision). */
async function syncDeploymentRevision(
  ctx: DeploymentSyncContext,
  d: Deployment,
  revision: string,
  status?: DeploymentStatus,
): Promise<Deployment> {
  const annotations = d.metadata?.annotations ?? {};
  if (annotations[WORKLOAD_NAMES.revisionAnnotation] === revision && status === undefined) return d;
  const next: Deployment = {
    ...d,
    metadata: {
      ...d.metadata,
      annotations: { ...annotations, [WORKLOAD_NAMES.revisionAnnotation]: revision },
    },
    ...(status !== undefined ? { status } : {}),
  };
  return ctx.client.updateStatus<Deployment>(GVR.deployments, next, ctx.signal);
}

/**
 * getAllReplicaSetsAndSyncRevision: splits the Deployment's ReplicaSets into the new one and the
 * old ones, bringing the new one's annotations up to date; creates it when asked and absent.
 */
export async function replicaSetsAndSyncRevision(
  ctx: DeploymentSyncContext,
  d: Deployment,
  all: readonly ReplicaSet[],
  createIfMissing: boolean,
): Promise<ReplicaSetsOfDeployment & { deployment: Deployment }> {
  const existing = findNewReplicaSet(d, all);
  const oldRSs = all.filter((rs) => rs !== existing);
  const newRevision = maxRevision(oldRSs) + 1;
  if (existing !== undefined) {
    const annotations = { ...(existing.metadata?.annotations ?? {}) };
    copyAnnotations(d, annotations);
    setRevision(annotations, newRevision);
    setReplicasAnnotations(annotations, replicasOf(d), replicasOf(d) + maxSurge(d));
    const minReadyChanged = (existing.spec?.minReadySeconds ?? 0) !== (d.spec?.minReadySeconds ?? 0);
    let newRS = existing;
    if (minReadyChanged || !jsonEqual(annotations, existing.metadata?.annotations ?? {})) {
      newRS = await ctx.client.update<ReplicaSet>(
        GVR.replicaSets,
        {
          ...existing,
          metadata: { ...existing.metadata, annotations },
          spec: { ...existing.spec, minReadySeconds: d.spec?.minReadySeconds ?? 0 },
        },
        {},
        ctx.signal,
      );
    }
    const revision = newRS.metadata?.annotations?.[WORKLOAD_NAMES.revisionAnnotation] ?? String(newRevision);
    let status: DeploymentStatus | undefined;
    if (
      getCondition(d.status, "Progressing") === undefined &&
      (d.spec?.progressDeadlineSeconds ?? 0) !== 2147483647
    ) {
      status = structuredClone(d.status ?? {});
      setCondition(
        status,
        newCondition(
          "Progressing",
          "True",
          DEPLOYMENT_REASONS.foundNewReplicaSet,
          `Found new replica set "${newRS.metadata?.name ?? ""}"`,
          ctx.now(),
        ),
      );
    }
    const deployment = await syncDeploymentRevision(ctx, d, revision, status);
    return { newRS, oldRSs, deployment };
  }
  if (!createIfMissing) return { newRS: undefined, oldRSs, deployment: d };
  return createNewReplicaSet(ctx, d, oldRSs, newRevision);
}

/** The replicas a brand-new ReplicaSet starts with (NewRSNewReplicas with none of its own). */
function initialReplicas(d: Deployment, oldRSs: readonly ReplicaSet[]): number {
  if (d.spec?.strategy?.type === "Recreate") return replicasOf(d);
  const maxTotal = replicasOf(d) + maxSurge(d);
  const current = sumSpecReplicas(oldRSs);
  if (current >= maxTotal) return 0;
  return Math.min(maxTotal - current, replicasOf(d));
}

async function createNewReplicaSet(
  ctx: DeploymentSyncContext,
  d: Deployment,
  oldRSs: ReplicaSet[],
  newRevision: number,
): Promise<ReplicaSetsOfDeployment & { deployment: Deployment }> {
  const collisionCount = d.status?.collisionCount;
  const hash = computeHash(d.spec?.template ?? {}, collisionCount);
  const template = structuredClone(d.spec?.template ?? {});
  template.metadata = {
    ...template.metadata,
    labels: { ...template.metadata?.labels, [WORKLOAD_NAMES.podTemplateHashLabel]: hash },
  };
  const selector = structuredClone(d.spec?.selector ?? {});
  selector.matchLabels = { ...selector.matchLabels, [WORKLOAD_NAMES.podTemplateHashLabel]: hash };
  const annotations: Record<string, string> = {};
  copyAnnotations(d, annotations);
  setRevision(annotations, newRevision);
  setReplicasAnnotations(annotations, replicasOf(d), replicasOf(d) + maxSurge(d));
  const replicas = initialReplicas(d, oldRSs);
  const name = `${d.metadata?.name ?? ""}-${hash}`;
  const rs: ReplicaSet = {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name,
      namespace: d.metadata?.namespace ?? "",
      labels: template.metadata.labels ?? {},
      annotations,
      ownerReferences: [newControllerRef(d, DEPLOYMENT_KIND)],
    },
    spec: { replicas, minReadySeconds: d.spec?.minReadySeconds ?? 0, selector, template },
  };
  let created: ReplicaSet;
  try {
    created = await ctx.client.create<ReplicaSet>(GVR.replicaSets, rs, ctx.signal);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    // A ReplicaSet of that name exists: ours with this template (a stale cache) is the new one;
    // anything else is a hash collision, resolved by bumping collisionCount (a new name next time).
    const found = await ctx.client.get<ReplicaSet>(
      GVR.replicaSets,
      name,
      { namespace: d.metadata?.namespace ?? "" },
      ctx.signal,
    );
    if (
      controllerOf(found)?.uid === d.metadata?.uid &&
      equalIgnoreHash(found.spec?.template, d.spec?.template)
    )
      return { newRS: found, oldRSs, deployment: d };
    const status = { ...structuredClone(d.status ?? {}), collisionCount: (collisionCount ?? 0) + 1 };
    await ctx.client.updateStatus<Deployment>(GVR.deployments, { ...d, status }, ctx.signal);
    throw new Error(
      `found a hash collision for deployment ${objectKey(d)}: bumping collisionCount to ${status.collisionCount}`,
    );
  }
  if (replicas > 0)
    ctx.recorder.event(
      d,
      "Normal",
      DEPLOYMENT_EVENTS.scalingReplicaSet,
      `Scaled up replica set ${name} from 0 to ${replicas}`,
    );
  const status = structuredClone(d.status ?? {});
  if ((d.spec?.progressDeadlineSeconds ?? 0) !== 2147483647)
    setCondition(
      status,
      newCondition(
        "Progressing",
        "True",
        DEPLOYMENT_REASONS.newReplicaSetCreated,
        `Created new replica set "${name}"`,
        ctx.now(),
      ),
    );
  const deployment = await syncDeploymentRevision(ctx, d, String(newRevision), status);
  return { newRS: created, oldRSs, deployment };
}

/** scaleReplicaSetAndRecordEvent: returns the ReplicaSet as written (unchanged when nothing to do). */
export async function scaleReplicaSet(
  ctx: DeploymentSyncContext,
  rs: ReplicaSet,
  newScale: number,
  d: Deployment,
): Promise<{ scaled: boolean; rs: ReplicaSet }> {
  const oldScale = replicasOf(rs);
  const annotations = { ...(rs.metadata?.annotations ?? {}) };
  const annotationsChanged = setReplicasAnnotations(annotations, replicasOf(d), replicasOf(d) + maxSurge(d));
  if (oldScale === newScale && !annotationsChanged) return { scaled: false, rs };
  const updated = await ctx.client.update<ReplicaSet>(
    GVR.replicaSets,
    { ...rs, metadata: { ...rs.metadata, annotations }, spec: { ...rs.spec, replicas: newScale } },
    {},
    ctx.signal,
  );
  if (oldScale !== newScale) {
    const direction = oldScale < newScale ? "up" : "down";
    ctx.recorder.event(
      d,
      "Normal",
      DEPLOYMENT_EVENTS.scalingReplicaSet,
      `Scaled ${direction} replica set ${rs.metadata?.name ?? ""} from ${oldScale} to ${newScale}`,
    );
  }
  return { scaled: oldScale !== newScale, rs: updated };
}
