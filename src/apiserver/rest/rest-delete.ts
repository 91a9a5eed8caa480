// The delete verbs: delete (preconditions, graceful deletion, finalizers → deletionTimestamp
// and keep) and deletecollection. The response is the object (ResourceDef.returnDeletedObject
// or while it is kept) or a Success Status, as upstream answers.

import {
  validateAdmission,
  type ListQuery,
  type RestContext,
  type RestResult,
  type Target,
} from "./rest-types.ts";
import { jsonEqual } from "../../base/index.ts";
import { listObjects } from "./rest-read.ts";
import { loadExisting } from "./rest-write.ts";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { StoreError, type StoredObject } from "../storage/types.ts";
import { apiVersionOf, finalizersOf, forOutput, metadataOf, stringField, timestamp } from "./objects.ts";
import {
  ApiError,
  badRequest,
  conflict,
  invalid,
  notFound,
  OPTIMISTIC_LOCK_MESSAGE,
  successStatus,
} from "../transport/status.ts";

// ---------------------------------------------------------------------------------------------
// delete

export interface DeleteOptions {
  dryRun: boolean;
  gracePeriodSeconds?: number;
  propagationPolicy?: string;
  preconditions?: { uid?: string; resourceVersion?: string };
}

const PROPAGATION_POLICIES = ["Orphan", "Background", "Foreground"];

/** Reads DeleteOptions from a request body (may be empty) and query parameters. */
export function parseDeleteOptions(body: unknown, query: URLSearchParams): DeleteOptions {
  const options: DeleteOptions = { dryRun: query.getAll("dryRun").includes("All") };
  const source: Record<string, unknown> =
    typeof body === "object" && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : {};
  if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body))) {
    throw badRequest("the body of a delete request must be a DeleteOptions object");
  }
  if (source.kind !== undefined && source.kind !== "DeleteOptions") {
    throw badRequest(
      `the object provided is unrecognized (must be of type DeleteOptions): kind ${JSON.stringify(source.kind)}`,
    );
  }
  const grace = source.gracePeriodSeconds ?? query.get("gracePeriodSeconds") ?? undefined;
  if (grace !== undefined) {
    const n = Number(grace);
    if (!Number.isInteger(n)) throw badRequest(`gracePeriodSeconds: Invalid value: ${JSON.stringify(grace)}`);
    options.gracePeriodSeconds = n;
  }
  const policy = source.propagationPolicy ?? query.get("propagationPolicy") ?? undefined;
  if (policy !== undefined) {
    if (typeof policy !== "string" || !PROPAGATION_POLICIES.includes(policy)) {
      throw invalid("", "DeleteOptions", "", [
        {
          field: "propagationPolicy",
          reason: "FieldValueNotSupported",
          message: `Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan", "nil"`,
        },
      ]);
    }
    options.propagationPolicy = policy;
  }
  // The deprecated orphanDependents means Orphan when true and Background when false.
  if (typeof source.orphanDependents === "boolean" && options.propagationPolicy === undefined)
    options.propagationPolicy = source.orphanDependents ? "Orphan" : "Background";
  if (Array.isArray(source.dryRun) && source.dryRun.includes("All")) options.dryRun = true;
  const pre = source.preconditions;
  if (typeof pre === "object" && pre !== null && !Array.isArray(pre)) {
    const p = pre as Record<string, unknown>;
    options.preconditions = {};
    if (typeof p.uid === "string") options.preconditions.uid = p.uid;
    if (typeof p.resourceVersion === "string") options.preconditions.resourceVersion = p.resourceVersion;
  }
  return options;
}

export function checkDeletePreconditions(target: Target, old: StoredObject, options: DeleteOptions): void {
  const meta = metadataOf(old.object);
  const pre = options.preconditions;
  if (pre?.uid !== undefined && pre.uid !== meta.uid) {
    throw conflict(
      target.def.group,
      target.def.resource,
      target.name,
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${stringField(meta, "uid")}`,
    );
  }
  if (pre?.resourceVersion !== undefined && pre.resourceVersion !== meta.resourceVersion) {
    throw conflict(
      target.def.group,
      target.def.resource,
      target.name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${stringField(meta, "resourceVersion")}`,
    );
  }
}

function deletedResponse(target: Target, object: KubeObject): RestResult {
  if (target.def.returnDeletedObject === true) return { code: 200, body: forOutput(target.def, object) };
  const details: Record<string, string> = { name: target.name, kind: target.def.resource };
  if (target.def.group !== "") details.group = target.def.group;
  const uid = object.metadata?.uid;
  if (typeof uid === "string") details.uid = uid;
  return { code: 200, body: successStatus(details) };
}

/**
 * The finalizers after a delete with `policy`, as upstream's deletionFinalizersForGarbageCollection:
 * Foreground adds foregroundDeletion (and drops orphan), Orphan the reverse, Background drops both;
 * no policy keeps them (every kind served here defaults to Background). The garbage collector
 * removes them; without one the object stays with its deletionTimestamp.
 */
function gcFinalizersFor(current: string[], policy: string | undefined): string[] {
  if (policy === undefined) return current;
  const add = policy === "Foreground" ? "foregroundDeletion" : policy === "Orphan" ? "orphan" : undefined;
  const result = current.filter((f) => f === add || (f !== "foregroundDeletion" && f !== "orphan"));
  if (add !== undefined && !result.includes(add)) result.push(add);
  return result;
}

export function deleteObject(ctx: RestContext, target: Target, options: DeleteOptions): RestResult {
  if (target.subresource !== "")
    throw notFound(target.def.group, `${target.def.resource}/${target.subresource}`, target.name);
  const old = loadExisting(ctx, target);
  checkDeletePreconditions(target, old, options);
  validateAdmission(ctx, {
    operation: "DELETE",
    def: target.def,
    subresource: "",
    namespace: target.namespace,
    name: target.name,
    old: old.object,
  });
  const next = structuredClone(old.object);
  const meta = metadataOf(next);
  const finalizers = ctx.gcFinalizers
    ? gcFinalizersFor(finalizersOf(next), options.propagationPolicy)
    : finalizersOf(next);
  const grace = target.def.deleteGracePeriod?.(old.object, options.gracePeriodSeconds) ?? 0;
  const graceful = grace > 0 && options.gracePeriodSeconds !== 0;
  if (finalizers.length === 0 && !graceful) {
    if (options.dryRun) return deletedResponse(target, old.object);
    try {
      const removed = ctx.store.delete(old.key, old.revision);
      return deletedResponse(target, removed.object);
    } catch (error) {
      if (error instanceof StoreError && error.reason === "Conflict") {
        throw conflict(target.def.group, target.def.resource, target.name, OPTIMISTIC_LOCK_MESSAGE);
      }
      throw error;
    }
  }
  // Graceful or finalizer-held: mark it, keep it. A repeated delete may only shorten the grace period.
  if (finalizers.length > 0) meta.finalizers = finalizers;
  const now = ctx.clock.now();
  const effectiveGrace = graceful ? grace : 0;
  const existingGrace =
    typeof meta.deletionGracePeriodSeconds === "number" ? meta.deletionGracePeriodSeconds : undefined;
  if (
    meta.deletionTimestamp === undefined ||
    (existingGrace !== undefined && effectiveGrace < existingGrace)
  ) {
    meta.deletionTimestamp = timestamp(now + effectiveGrace * 1000);
    meta.deletionGracePeriodSeconds = effectiveGrace;
  }
  if (jsonEqual(next, old.object)) return { code: 200, body: forOutput(target.def, old.object) };
  if (options.dryRun) return { code: 200, body: forOutput(target.def, next) };
  try {
    const stored = ctx.store.update(old.key, next, old.revision);
    return { code: 200, body: forOutput(target.def, stored.object) };
  } catch (error) {
    if (error instanceof StoreError && error.reason === "Conflict") {
      throw conflict(target.def.group, target.def.resource, target.name, OPTIMISTIC_LOCK_MESSAGE);
    }
    throw error;
  }
}

/** Deletes every matching object (each as a single delete would); answers the list of what was deleted or marked. */
export function deleteCollection(
  ctx: RestContext,
  def: ResourceDef,
  namespace: string,
  query: ListQuery,
  options: DeleteOptions,
): RestResult {
  const page = listObjects(ctx, def, namespace, { ...query, limit: null, continueToken: null });
  const items: KubeObject[] = [];
  for (const item of page.items) {
    const meta = metadataOf(item);
    const target: Target = {
      def,
      namespace: stringField(meta, "namespace"),
      name: stringField(meta, "name"),
      subresource: "",
    };
    try {
      const result = deleteObject(ctx, target, { ...options, preconditions: {} });
      items.push(result.body.kind === "Status" ? item : (result.body as KubeObject));
    } catch (error) {
      if (error instanceof ApiError && error.code === 404) continue;
      throw error;
    }
  }
  return {
    code: 200,
    body: {
      apiVersion: apiVersionOf(def),
      kind: def.listKind,
      metadata: { resourceVersion: String(ctx.store.currentRevision()) },
      items,
    },
  };
}
