// The /scale subresource of statefulsets, deployments and replicasets (kube-apiserver's
// ScaleREST): an autoscaling/v1 Scale view of the parent object. GET shows spec.replicas,
// status.replicas and status.selector (the spec's LabelSelector in its string form); PUT and
// PATCH change the parent's spec.replicas only, through the parent's own update rules (status
// kept, validation, generation bumped), so the parent's controller sees an ordinary spec change.
// Preconditions as upstream: a Scale's resourceVersion, when set, must be the parent's current
// one (409 otherwise; none means unconditional), a set uid must be the parent's.

import type { KubeObject } from "./resource.ts";
import type { RestContext, RestResult, Target, WriteOptions } from "./rest-types.ts";
import { formatLabelSelector, labelSelectorRequirements } from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import { metadataOf, stringField } from "./objects.ts";
import { PATCH_TYPES } from "./patch.ts";
import {
  applyPatch,
  checkPatchType,
  checkPrecondition,
  loadExisting,
  updateThroughSubresource,
} from "./rest-write.ts";
import type { StoredObject } from "../storage/types.ts";
import { badRequest, conflict, invalid } from "../transport/status.ts";

export const SCALE_API_VERSION = "autoscaling/v1";
export const SCALE_KIND = "Scale";
const SCALE_GROUP = "autoscaling";
const INT32_MAX = 2 ** 31 - 1;

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/**
 * The selector as labels.Selector.String() prints it. A selector that does not compile is a
 * 400, as upstream's scaleFrom* answers it (the parent's validation keeps one from being stored).
 */
function selectorString(spec: Record<string, unknown>): string {
  const selector = spec.selector;
  if (typeof selector !== "object" || selector === null) return "";
  try {
    return formatLabelSelector(labelSelectorRequirements(selector));
  } catch (error) {
    throw badRequest(errorMessage(error));
  }
}

/** The Scale of a stored parent object. */
export function scaleOf(parent: KubeObject): KubeObject {
  const meta = metadataOf(structuredClone(parent));
  const spec = record(parent.spec);
  const status = record(parent.status);
  const metadata: Record<string, unknown> = { name: meta.name };
  for (const field of ["namespace", "uid", "resourceVersion", "creationTimestamp"]) {
    if (meta[field] !== undefined && meta[field] !== "") metadata[field] = meta[field];
  }
  const scaleSpec: Record<string, unknown> = {};
  if (typeof spec.replicas === "number") scaleSpec.replicas = spec.replicas;
  const scaleStatus: Record<string, unknown> = {
    replicas: typeof status.replicas === "number" ? status.replicas : 0,
  };
  const selector = selectorString(spec);
  if (selector !== "") scaleStatus.selector = selector;
  return { kind: SCALE_KIND, apiVersion: SCALE_API_VERSION, metadata, spec: scaleSpec, status: scaleStatus };
}

/** The stored parent object (404 naming the parent resource, as upstream's store answers). */
function loadParent(ctx: RestContext, target: Target): StoredObject {
  return loadExisting(ctx, { ...target, subresource: "" });
}

/** GET <resource>/<name>/scale. */
export function getScale(ctx: RestContext, target: Target): RestResult {
  return { code: 200, body: scaleOf(loadParent(ctx, target).object) };
}

/** A body that must be an autoscaling/v1 Scale (kind and apiVersion may be left out). */
function checkScaleBody(body: unknown): KubeObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw badRequest(`the body of the request must be a JSON object of kind ${SCALE_KIND}`);
  }
  const scale = body as KubeObject;
  if (scale.kind !== undefined && scale.kind !== "" && scale.kind !== SCALE_KIND) {
    throw badRequest(
      `the object provided is unrecognized (must be of type ${SCALE_KIND}): kind ${JSON.stringify(scale.kind)} does not match`,
    );
  }
  const apiVersion = scale.apiVersion;
  if (apiVersion !== undefined && apiVersion !== "" && apiVersion !== SCALE_API_VERSION) {
    const shown = typeof apiVersion === "string" ? apiVersion : JSON.stringify(apiVersion);
    throw badRequest(
      `the API version in the data (${shown}) does not match the expected API version (${SCALE_API_VERSION})`,
    );
  }
  if (scale.metadata !== undefined && (typeof scale.metadata !== "object" || scale.metadata === null)) {
    throw badRequest("metadata: must be an object");
  }
  const replicas = record(scale.spec).replicas;
  if (
    replicas !== undefined &&
    replicas !== null &&
    (typeof replicas !== "number" || !Number.isInteger(replicas) || Math.abs(replicas) > INT32_MAX)
  ) {
    // Scale.spec.replicas is a Go int32: anything else fails decoding.
    throw badRequest(
      `Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal ${JSON.stringify(replicas)} into Go struct field ScaleSpec.spec.replicas of type int32`,
    );
  }
  return scale;
}

/**
 * Applies the Scale `scale` (a PUT body or a patched Scale) to the stored parent: name, uid and
 * resourceVersion preconditions, ValidateScale, then the parent's own update.
 */
function writeScale(ctx: RestContext, target: Target, scale: KubeObject, options: WriteOptions): RestResult {
  const { def } = target;
  const meta = metadataOf(scale);
  const bodyName = stringField(meta, "name");
  if (bodyName !== target.name) {
    throw badRequest(
      `the name of the object (${bodyName}) does not match the name on the URL (${target.name})`,
    );
  }
  const bodyNamespace = stringField(meta, "namespace");
  if (def.namespaced && bodyNamespace !== "" && bodyNamespace !== target.namespace) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
  const old = loadParent(ctx, target);
  // A Go int32 left out is 0: a Scale without spec.replicas scales to zero, as upstream.
  const replicas = record(scale.spec).replicas;
  const wanted = typeof replicas === "number" ? replicas : 0;
  if (wanted < 0) {
    throw invalid(SCALE_GROUP, SCALE_KIND, target.name, [
      {
        field: "spec.replicas",
        reason: "FieldValueInvalid",
        message: `Invalid value: ${wanted}: must be greater than or equal to 0`,
      },
    ]);
  }
  const uid = stringField(meta, "uid");
  const parentUid = stringField(metadataOf(old.object), "uid");
  if (uid !== "" && uid !== parentUid) {
    throw conflict(
      def.group,
      `${def.resource}/scale`,
      target.name,
      `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${parentUid}`,
    );
  }
  // The parent's own conflict (statefulsets.apps "web"), as upstream's store reports it.
  checkPrecondition(target, old, meta.resourceVersion);
  const next = structuredClone(old.object);
  next.spec = { ...record(next.spec), replicas: wanted };
  const result = updateThroughSubresource(ctx, target, old, next, options, scaleOf);
  return { code: 200, body: scaleOf(result.body as KubeObject) };
}

/** PUT <resource>/<name>/scale. */
export function updateScale(
  ctx: RestContext,
  target: Target,
  body: unknown,
  options: WriteOptions,
): RestResult {
  return writeScale(ctx, target, checkScaleBody(body), options);
}

/** PATCH <resource>/<name>/scale: the patch applies to the current Scale, then as a PUT of the result. */
export function patchScale(
  ctx: RestContext,
  target: Target,
  patch: { contentType: string; body: unknown },
  options: WriteOptions,
): RestResult {
  checkPatchType(patch.contentType, [PATCH_TYPES.json, PATCH_TYPES.merge, PATCH_TYPES.strategic]);
  const current = scaleOf(loadParent(ctx, target).object);
  // A Scale has no lists: its strategic merge is the plain merge plus the directives.
  const patched = applyPatch(current, patch, {});
  return writeScale(ctx, target, checkScaleBody(patched), options);
}
