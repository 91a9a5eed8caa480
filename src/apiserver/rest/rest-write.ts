// The write verbs: create, update (PUT), patch and pods/binding, following kube-apiserver's
// generic registry: metadata the server owns (uid, creationTimestamp, generation,
// resourceVersion, deletion fields) is set here and never taken from the client; the status
// subresource splits writes when ResourceDef.hasStatus; an update that changes nothing writes
// nothing; removing the last finalizer of an object being deleted removes it. Every verb runs
// synchronously against the store, so read-check-write is atomic in-process.

import { jsonEqual } from "../../base/index.ts";
import { randomUUID } from "node:crypto";
import {
  NAMESPACE_KEY_PREFIX,
  validateAdmission,
  type RestContext,
  type RestResult,
  type Target,
  type WriteOptions,
} from "./rest-types.ts";
import type { FieldCause, KubeObject, ResourceDef } from "./resource.ts";
import { StoreError, type StoredObject } from "../storage/types.ts";
import {
  apiVersionOf,
  finalizersOf,
  forOutput,
  generatedName,
  metadataOf,
  objectKey,
  outputHead,
  stringField,
  timestamp,
} from "./objects.ts";
import { MAX_NESTING_DEPTH, nestedTooDeep } from "../transport/http.ts";
import { decodeError, unknownFields } from "../discovery/openapi.ts";
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  checkPatchedSize,
  PATCH_TYPES,
} from "./patch.ts";
import {
  alreadyExists,
  ApiError,
  badRequest,
  conflict,
  forbidden,
  invalid,
  notFound,
  OPTIMISTIC_LOCK_MESSAGE,
  qualifiedResource,
  successStatus,
  unsupportedMediaType,
  type StatusDetails,
} from "../transport/status.ts";

// ---------------------------------------------------------------------------------------------
// create

/** Unknown fields (schema-carrying kinds only) as fieldValidation says: 400 when Strict, warnings when Warn. */
function checkUnknownFields(def: ResourceDef, object: KubeObject, options: WriteOptions): void {
  const mode = options.fieldValidation ?? "Warn";
  if (mode === "Ignore") return;
  const messages = [
    ...(options.duplicateFields ?? []).map((path) => `duplicate field "${path}"`),
    ...unknownFields(def, object).map((path) => `unknown field "${path}"`),
  ];
  if (messages.length === 0) return;
  if (mode === "Strict") {
    throw badRequest(
      `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${messages.join(", ")}`,
    );
  }
  options.warnings?.push(...messages);
}

/** Checks kind/apiVersion of a request body against the endpoint; both may be omitted. */
export function checkBodyType(def: ResourceDef, body: unknown): KubeObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw badRequest(`the body of the request must be a JSON object of kind ${def.kind}`);
  }
  const object = body as KubeObject;
  const kind = object.kind;
  const apiVersion = object.apiVersion;
  if (kind !== undefined && kind !== "" && kind !== def.kind) {
    throw badRequest(
      `the object provided is unrecognized (must be of type ${def.kind}): kind ${JSON.stringify(kind)} does not match`,
    );
  }
  if (apiVersion !== undefined && apiVersion !== "") {
    const want = apiVersionOf(def);
    const gv = typeof apiVersion === "string" ? apiVersion : JSON.stringify(apiVersion);
    const group = gv.includes("/") ? gv.slice(0, gv.indexOf("/")) : "";
    if (gv !== want && group !== def.group) {
      throw badRequest(
        `the API version in the data (${gv}) does not match the expected API version (${want})`,
      );
    }
  }
  if (
    object.metadata !== undefined &&
    (typeof object.metadata !== "object" || object.metadata === null || Array.isArray(object.metadata))
  ) {
    throw badRequest("metadata: must be an object");
  }
  // Values of the wrong type for the kind's Go struct (upstream fails decoding: 400).
  const decode = decodeError(def, object);
  if (decode !== undefined) throw badRequest(decode);
  return object;
}

/**
 * A body's apiVersion must name a version that serves this kind: the endpoint's, or another
 * served version of the same group (converted as upstream's decoder does). Anything else is 400:
 * upstream's version-mismatch wording for custom kinds and for a kind served in that other
 * group/version (decodable, wrong endpoint), its decoder wording for a version it cannot decode.
 */
function checkBodyVersion(ctx: RestContext, def: ResourceDef, object: KubeObject): void {
  const apiVersion = object.apiVersion;
  if (typeof apiVersion !== "string" || apiVersion === "") return;
  const want = apiVersionOf(def);
  if (apiVersion === want) return;
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  const served = ctx.registry.lookup(group, version, def.resource);
  if (group === def.group && served !== undefined && served.kind === def.kind) return;
  // A kind the server knows in that group/version decodes, then fails the version check.
  const known = ctx.registry
    .all()
    .some((d) => d.group === group && d.version === version && d.kind === def.kind);
  if (def.custom === true || known) {
    throw badRequest(
      `the API version in the data (${apiVersion}) does not match the expected API version (${want})`,
    );
  }
  throw badRequest(
    `${def.kind} in version ${JSON.stringify(version)} cannot be handled as a ${def.kind}: no kind ${JSON.stringify(def.kind)} is registered for version ${JSON.stringify(apiVersion)} in scheme "pkg/api/legacyscheme/scheme.go:30"`,
  );
}

function checkNamespace(def: ResourceDef, meta: Record<string, unknown>, pathNamespace: string): void {
  if (!def.namespaced) {
    delete meta.namespace;
    return;
  }
  const bodyNamespace = stringField(meta, "namespace");
  if (bodyNamespace !== "" && bodyNamespace !== pathNamespace) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
  meta.namespace = pathNamespace;
}

/** Upstream's NamespaceLifecycle admission: the namespace must exist and not be terminating. */
function requireLiveNamespace(ctx: RestContext, def: ResourceDef, namespace: string, name: string): void {
  const stored = ctx.store.get(NAMESPACE_KEY_PREFIX + namespace);
  if (!stored) throw notFound("", "namespaces", namespace);
  if (stored.object.metadata?.deletionTimestamp) {
    const details: StatusDetails = {
      name,
      kind: def.resource,
      causes: [
        {
          reason: "NamespaceTerminating",
          message: `namespace ${namespace} is being terminated`,
          field: "metadata.namespace",
        },
      ],
    };
    if (def.group !== "") details.group = def.group;
    throw forbidden(
      `${qualifiedResource(def.group, def.resource)} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      details,
    );
  }
}

/** Names end up in URL path segments: upstream rejects these before any kind-specific validation. */
function pathSegmentCauses(name: string): { field: string; reason: string; message: string }[] {
  if (name === "." || name === "..") {
    return [
      {
        field: "metadata.name",
        reason: "FieldValueInvalid",
        message: `Invalid value: "${name}": may not be '${name}'`,
      },
    ];
  }
  for (const bad of ["/", "%"]) {
    if (name.includes(bad)) {
      return [
        {
          field: "metadata.name",
          reason: "FieldValueInvalid",
          message: `Invalid value: "${name}": may not contain '${bad}'`,
        },
      ];
    }
  }
  return [];
}

/**
 * The answer showing a stored object: its stored text as is when that already is its output
 * form (so a write's answer is not decoded and encoded again), the object decoded only if
 * someone reads `body` (protobuf, PartialObjectMetadata, a converted view without the text).
 */
export function storedAnswer(def: ResourceDef, code: number, stored: StoredObject): RestResult {
  let body: KubeObject | undefined;
  const answer: RestResult = {
    code,
    get body(): KubeObject {
      return (body ??= forOutput(def, stored.object));
    },
  };
  if (stored.json?.startsWith(outputHead(def))) answer.encoded = stored.json;
  return answer;
}

/** Takes `body` over: it is changed and stored, not copied. */
export function createObject(
  ctx: RestContext,
  def: ResourceDef,
  namespace: string,
  body: unknown,
  options: WriteOptions,
): RestResult {
  // Not copied: every caller hands over a body of its own (freshly decoded, or built for this call).
  const object = checkBodyType(def, body);
  checkBodyVersion(ctx, def, object);
  const meta = metadataOf(object);
  checkNamespace(def, meta, namespace);
  let name = stringField(meta, "name");
  const generateName = stringField(meta, "generateName");
  if (name === "" && generateName !== "") name = generatedName(generateName);
  if (name === "") {
    throw invalid(def.group, def.kind, "", [
      {
        field: "metadata.name",
        reason: "FieldValueRequired",
        message: "Required value: name or generateName is required",
      },
    ]);
  }
  const segmentCauses = pathSegmentCauses(name);
  if (segmentCauses.length > 0) throw invalid(def.group, def.kind, name, segmentCauses);
  if (def.namespaced) requireLiveNamespace(ctx, def, namespace, name);
  const requestedVersion = meta.resourceVersion;
  meta.name = name;
  meta.uid = randomUUID();
  meta.creationTimestamp = timestamp(ctx.clock.now());
  if (def.tracksGeneration ?? true) meta.generation = 1;
  else delete meta.generation;
  for (const field of [
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
  ]) {
    delete meta[field];
  }
  // Most kinds start with an empty status (the status writer owns it); nodes register with theirs.
  if (def.hasStatus && !def.keepStatusOnCreate) delete object.status;
  object.apiVersion = apiVersionOf(def);
  object.kind = def.kind;
  checkUnknownFields(def, object, options);
  def.applyDefaults(object);
  def.dropDisabledFields?.(object, undefined);
  for (const plugin of ctx.admission) plugin.admitCreate(ctx, def, object);
  const causes = def.validateCreate(object);
  if (causes.length > 0) throw invalid(def.group, def.kind, name, causes);
  validateAdmission(ctx, { operation: "CREATE", def, subresource: "", namespace, name: "", object });
  ctx.checkWrite?.({ def, namespace, object });
  if (options.dryRun) return { code: 201, body: forOutput(def, object) };
  // The storage layer refuses a set resourceVersion after validation, with a plain error that
  // upstream answers as a 500 without a reason; "0" and unparsable values pass, as there.
  if (typeof requestedVersion === "string" && /^\d+$/.test(requestedVersion) && Number(requestedVersion) > 0)
    throw new ApiError(500, "", "resourceVersion should not be set on objects to be created");
  try {
    return storedAnswer(def, 201, ctx.store.create(objectKey(def, namespace, name), object));
  } catch (error) {
    if (error instanceof StoreError && error.reason === "AlreadyExists") {
      throw alreadyExists(def.group, def.resource, name);
    }
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// update / patch

/** The metadata a /status write may change unless the kind says otherwise (ResourceDef.statusWritableMetadata). */
const STATUS_WRITABLE_METADATA: readonly string[] = [
  "labels",
  "annotations",
  "finalizers",
  "ownerReferences",
];

export function loadExisting(ctx: RestContext, target: Target): StoredObject {
  const stored = ctx.store.get(objectKey(target.def, target.namespace, target.name));
  if (!stored) throw notFound(target.def.group, target.def.resource, target.name);
  return stored;
}

function checkSubresource(target: Target): void {
  if (target.subresource === "") return;
  if (target.subresource !== "status" || !target.def.subresources.includes("status")) {
    throw notFound(target.def.group, `${target.def.resource}/${target.subresource}`, target.name);
  }
}

/** Upstream's ValidateNoNewFinalizers: an object being deleted may only lose finalizers. */
function newFinalizerCauses(next: KubeObject, old: KubeObject): FieldCause[] {
  if (!old.metadata?.deletionTimestamp) return [];
  const before = new Set(finalizersOf(old));
  const added = [...new Set(finalizersOf(next).filter((f) => !before.has(f)))].sort();
  if (added.length === 0) return [];
  const list = `[]string{${added.map((f) => JSON.stringify(f)).join(", ")}}`;
  return [
    {
      field: "metadata.finalizers",
      reason: "FieldValueForbidden",
      message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${list}`,
    },
  ];
}

/**
 * The object a write of `incoming` to `target` would store, given the current `old` object:
 * server-owned metadata from old, status split applied, defaults applied, generation bumped.
 * `admitted` is what admission is shown of both objects when the write came through a
 * subresource with a kind of its own (a scale write shows Scales, as upstream).
 */
function prepareUpdate(
  ctx: RestContext,
  target: Target,
  old: KubeObject,
  incoming: KubeObject,
  admitted: (object: KubeObject) => KubeObject = (object) => object,
): KubeObject {
  const { def } = target;
  const oldMeta = metadataOf(old);
  let next: KubeObject;
  if (target.subresource === "status") {
    next = structuredClone(old);
    if (incoming.status === undefined) delete next.status;
    else next.status = structuredClone(incoming.status);
    const nextMeta = metadataOf(next);
    const incomingMeta = metadataOf(incoming);
    for (const field of def.statusWritableMetadata ?? STATUS_WRITABLE_METADATA) {
      if (incomingMeta[field] === undefined) delete nextMeta[field];
      else nextMeta[field] = structuredClone(incomingMeta[field]);
    }
  } else {
    next = structuredClone(incoming);
    if (def.hasStatus) {
      if (old.status === undefined) delete next.status;
      else next.status = structuredClone(old.status);
    }
  }
  const meta = metadataOf(next);
  const incomingUid = stringField(meta, "uid");
  if (incomingUid !== "" && incomingUid !== oldMeta.uid) {
    throw invalid(def.group, def.kind, target.name, [
      {
        field: "metadata.uid",
        reason: "FieldValueInvalid",
        message: `Invalid value: "${incomingUid}": field is immutable`,
      },
    ]);
  }
  for (const field of [
    "uid",
    "creationTimestamp",
    "name",
    "namespace",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
  ]) {
    if (oldMeta[field] === undefined) delete meta[field];
    else meta[field] = oldMeta[field];
  }
  delete meta.managedFields;
  delete meta.selfLink;
  next.apiVersion = apiVersionOf(def);
  next.kind = def.kind;
  def.applyDefaults(next);
  def.dropDisabledFields?.(next, old);
  const causes = [
    ...newFinalizerCauses(next, old),
    ...(target.subresource === "status"
      ? def.validateStatusUpdate(next, old)
      : def.validateUpdate(next, old)),
  ];
  if (causes.length > 0) throw invalid(def.group, def.kind, target.name, causes);
  for (const plugin of ctx.admission) plugin.validateUpdate?.(ctx, def, target.subresource, next, old);
  validateAdmission(ctx, {
    operation: "UPDATE",
    def,
    subresource: target.subresource,
    namespace: target.namespace,
    name: target.name,
    object: admitted(next),
    old: admitted(old),
  });
  if (target.subresource === "") ctx.checkWrite?.({ def, namespace: target.namespace, object: next, old });
  // Only a status write leaves the spec alone; the main resource and scale change it.
  if ((def.tracksGeneration ?? true) && target.subresource !== "status" && def.specChanged(next, old)) {
    meta.generation = (typeof oldMeta.generation === "number" ? oldMeta.generation : 0) + 1;
  }
  meta.resourceVersion = oldMeta.resourceVersion;
  return next;
}

/**
 * An update removes the object when it is being deleted, has no finalizers left and no grace
 * period pending (upstream's shouldDeleteDuringUpdate): a pod in graceful termination
 * (deletionGracePeriodSeconds > 0) stays until it is deleted with grace 0.
 */
function deletesOnUpdate(object: KubeObject): boolean {
  const meta = object.metadata;
  if (!meta?.deletionTimestamp || finalizersOf(object).length > 0) return false;
  const grace = meta.deletionGracePeriodSeconds;
  return grace === undefined || grace === 0;
}

/** Stores `next` over `old` (or removes it when it is being deleted and has no finalizers left). */
function commit(
  ctx: RestContext,
  target: Target,
  old: StoredObject,
  next: KubeObject,
  options: WriteOptions,
): RestResult {
  const { def } = target;
  if (jsonEqual(next, old.object)) return { code: 200, body: forOutput(def, old.object) };
  if (options.dryRun) return { code: 200, body: forOutput(def, next) };
  try {
    if (deletesOnUpdate(next)) {
      const stored = ctx.store.update(old.key, next, old.revision);
      return storedAnswer(def, 200, ctx.store.delete(old.key, stored.revision));
    }
    return storedAnswer(def, 200, ctx.store.update(old.key, next, old.revision));
  } catch (error) {
    if (error instanceof StoreError && error.reason === "Conflict") {
      throw conflict(def.group, def.resource, target.name, OPTIMISTIC_LOCK_MESSAGE);
    }
    if (error instanceof StoreError && error.reason === "NotFound") {
      throw notFound(def.group, def.resource, target.name);
    }
    throw error;
  }
}

/** A resourceVersion the write names must be the stored one (409 otherwise); none: unconditional. */
export function checkPrecondition(target: Target, old: StoredObject, requested: unknown): void {
  if (requested === undefined || requested === null || requested === "") return;
  if (typeof requested !== "string" || !/^\d+$/.test(requested)) {
    throw badRequest(
      `metadata.resourceVersion: Invalid value: ${JSON.stringify(requested)}: must be a decimal string`,
    );
  }
  if (Number(requested) !== old.revision) {
    throw conflict(target.def.group, target.def.resource, target.name, OPTIMISTIC_LOCK_MESSAGE);
  }
}

export function updateObject(
  ctx: RestContext,
  target: Target,
  body: unknown,
  options: WriteOptions,
): RestResult {
  checkSubresource(target);
  const incoming = checkBodyType(target.def, body);
  checkUnknownFields(target.def, incoming, options);
  // Read only (a copy of the whole body just to read two fields cost as much as the write).
  const meta: Record<string, unknown> = incoming.metadata ?? {};
  const bodyName = stringField(meta, "name");
  if (bodyName !== target.name) {
    throw badRequest(
      `the name of the object (${bodyName}) does not match the name on the URL (${target.name})`,
    );
  }
  if (target.def.namespaced) {
    const bodyNamespace = stringField(meta, "namespace");
    if (bodyNamespace !== "" && bodyNamespace !== target.namespace) {
      throw badRequest(
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    }
  }
  checkBodyVersion(ctx, target.def, incoming);
  const existing = ctx.store.get(objectKey(target.def, target.namespace, target.name));
  if (!existing && target.def.allowCreateOnUpdate === true && target.subresource === "") {
    return createObject(ctx, target.def, target.namespace, body, options);
  }
  const old = existing ?? loadExisting(ctx, target);
  const requested = incoming.metadata?.resourceVersion;
  if ((requested === undefined || requested === "") && target.def.allowUnconditionalUpdate === false) {
    // Upstream's Store.Update names the resource, not the kind, in this Invalid error.
    throw invalid(target.def.group, target.def.resource, target.name, [
      {
        field: "metadata.resourceVersion",
        reason: "FieldValueInvalid",
        message: "Invalid value: 0x0: must be specified for an update",
      },
    ]);
  }
  checkPrecondition(target, old, requested);
  const next = prepareUpdate(ctx, target, old.object, incoming);
  return commit(ctx, target, old, next, options);
}

/**
 * Stores `next`, the parent object a subresource with a kind of its own (scale) derived from
 * the stored `old`, under the main resource's update rules; admission sees `admitted` of both.
 * The caller has checked the subresource's own preconditions against `old`.
 */
export function updateThroughSubresource(
  ctx: RestContext,
  target: Target,
  old: StoredObject,
  next: KubeObject,
  options: WriteOptions,
  admitted: (object: KubeObject) => KubeObject,
): RestResult {
  return commit(ctx, target, old, prepareUpdate(ctx, target, old.object, next, admitted), options);
}

export const PATCH_CONTENT_TYPES = [
  PATCH_TYPES.json,
  PATCH_TYPES.merge,
  PATCH_TYPES.strategic,
  PATCH_TYPES.apply,
];

/**
 * Refuses a patch type the endpoint does not take (415 listing `accepted`); server-side apply
 * is refused even where upstream takes it, saying so.
 */
export function checkPatchType(contentType: string, accepted: readonly string[]): void {
  if (contentType === PATCH_TYPES.apply) {
    const base = unsupportedMediaType(accepted.filter((t) => t !== PATCH_TYPES.apply));
    throw new ApiError(
      415,
      base.reason,
      `${base.message} (server-side apply is not supported by the csikit API server; use kubectl apply without --server-side)`,
    );
  }
  if (!accepted.includes(contentType)) throw unsupportedMediaType(accepted);
}

/** `original` with a patch of a type checkPatchType let through applied (a new object). */
export function applyPatch(
  original: KubeObject,
  patch: { contentType: string; body: unknown },
  strategies: ResourceDef["patchStrategies"],
): unknown {
  switch (patch.contentType) {
    case PATCH_TYPES.json:
      return applyJsonPatch(original, patch.body);
    case PATCH_TYPES.merge:
      if (typeof patch.body !== "object" || patch.body === null || Array.isArray(patch.body)) {
        throw badRequest("merge patch must be a JSON object");
      }
      return applyMergePatch(original, patch.body);
    default:
      return applyStrategicMergePatch(original, patch.body, strategies);
  }
}

export function patchObject(
  ctx: RestContext,
  target: Target,
  patch: { contentType: string; body: unknown },
  options: WriteOptions,
): RestResult {
  checkSubresource(target);
  const { def } = target;
  const custom = def.custom === true;
  checkPatchType(
    patch.contentType,
    custom ? [PATCH_TYPES.json, PATCH_TYPES.merge, PATCH_TYPES.apply] : PATCH_CONTENT_TYPES,
  );
  const old = loadExisting(ctx, target);
  const patched = applyPatch(old.object, patch, def.patchStrategies);
  if (nestedTooDeep(patched)) {
    throw new ApiError(
      422,
      "Invalid",
      `the patched object nests deeper than ${MAX_NESTING_DEPTH} levels, which the server does not store`,
    );
  }
  checkPatchedSize(patched);
  const incoming = checkBodyType(def, patched);
  checkBodyVersion(ctx, def, incoming);
  checkUnknownFields(def, incoming, options);
  const meta = metadataOf(incoming);
  if (stringField(meta, "name") !== target.name) {
    throw badRequest(
      `the name of the object (${stringField(meta, "name")}) does not match the name on the URL (${target.name})`,
    );
  }
  if (def.namespaced && stringField(meta, "namespace") !== target.namespace) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
  checkPrecondition(target, old, meta.resourceVersion);
  const next = prepareUpdate(ctx, target, old.object, incoming);
  return commit(ctx, target, old, next, options);
}

// ---------------------------------------------------------------------------------------------
// pods/binding

/**
 * The PodScheduled=True condition the binding sets (upstream's UpdatePodCondition): reason and
 * message cleared, the transition time kept when the status was already True.
 */
function setPodScheduled(pod: KubeObject, now: string): void {
  const status = (typeof pod.status === "object" && pod.status !== null ? pod.status : {}) as Record<
    string,
    unknown
  >;
  const conditions = Array.isArray(status.conditions) ? (status.conditions as Record<string, unknown>[]) : [];
  const index = conditions.findIndex((c) => typeof c === "object" && c !== null && c.type === "PodScheduled");
  const old = index >= 0 ? conditions[index] : undefined;
  const condition = {
    type: "PodScheduled",
    status: "True",
    lastProbeTime: null,
    lastTransitionTime: old?.status === "True" ? (old.lastTransitionTime ?? now) : now,
  };
  if (index >= 0) conditions[index] = condition;
  else conditions.push(condition);
  status.conditions = conditions;
  pod.status = status;
}

/** POST pods/<name>/binding: sets spec.nodeName once and PodScheduled=True, as the scheduler's bind does. */
export function bindPod(ctx: RestContext, target: Target, body: unknown, options: WriteOptions): RestResult {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw badRequest("the body of a binding request must be a Binding object");
  }
  const binding = body as Record<string, unknown>;
  if (binding.kind !== undefined && binding.kind !== "Binding") {
    throw badRequest(
      `the object provided is unrecognized (must be of type Binding): kind ${JSON.stringify(binding.kind)}`,
    );
  }
  const bindingTarget = binding.target;
  const node =
    typeof bindingTarget === "object" && bindingTarget !== null && "name" in bindingTarget
      ? bindingTarget.name
      : undefined;
  if (typeof node !== "string" || node === "") {
    throw invalid("", "Binding", target.name, [
      { field: "target.name", reason: "FieldValueRequired", message: "Required value" },
    ]);
  }
  const old = loadExisting(ctx, { ...target, subresource: "" });
  validateAdmission(ctx, {
    operation: "CREATE",
    def: target.def,
    subresource: "binding",
    namespace: target.namespace,
    name: target.name,
    object: binding,
    old: old.object,
  });
  const next = structuredClone(old.object);
  const meta = metadataOf(next);
  if (meta.deletionTimestamp) {
    throw conflict("", "pods", target.name, "pod is being deleted, cannot be assigned to a host");
  }
  const spec = (typeof next.spec === "object" && next.spec !== null ? next.spec : {}) as Record<
    string,
    unknown
  >;
  const current = typeof spec.nodeName === "string" ? spec.nodeName : "";
  if (current !== "") {
    throw conflict("", "pods", target.name, `pod ${target.name} is already assigned to node "${current}"`);
  }
  spec.nodeName = node;
  next.spec = spec;
  setPodScheduled(next, timestamp(ctx.clock.now()));
  const bindingMeta = binding.metadata;
  if (typeof bindingMeta === "object" && bindingMeta !== null && "annotations" in bindingMeta) {
    const annotations = bindingMeta.annotations;
    if (typeof annotations === "object" && annotations !== null) {
      const existing =
        typeof meta.annotations === "object" && meta.annotations !== null ? meta.annotations : {};
      meta.annotations = { ...existing, ...annotations };
    }
  }
  if (!options.dryRun) {
    try {
      ctx.store.update(old.key, next, old.revision);
    } catch (error) {
      if (error instanceof StoreError && error.reason === "Conflict") {
        throw conflict("", "pods", target.name, OPTIMISTIC_LOCK_MESSAGE);
      }
      throw error;
    }
  }
  return { code: 201, body: { ...successStatus({}), code: 201 } };
}
