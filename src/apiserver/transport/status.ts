// Kubernetes Status objects and the error type the REST layer throws to produce them. Every
// failure a client can observe goes through `ApiError`, so the HTTP code, `reason`, `message`
// and `details` always agree with what kube-apiserver answers for the same situation
// (k8s.io/apimachinery/pkg/api/errors). Messages never carry stack traces or secrets.

import type { FieldCause } from "../rest/resource.ts";

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: FieldCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, unknown>;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** A failure the client sees as a Status object with `code`. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: StatusDetails | undefined;
  constructor(code: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  toStatus(): Status {
    const status: Status = {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    // StatusReasonUnknown is "" and omitted on the wire, as upstream's omitempty does.
    if (this.reason === "") delete status.reason;
    if (this.details) status.details = this.details;
    return status;
  }
}

/** "persistentvolumeclaims" or "storageclasses.storage.k8s.io", as upstream names a GroupResource. */
export function qualifiedResource(group: string, resource: string): string {
  return group === "" ? resource : `${resource}.${group}`;
}

function resourceDetails(group: string, resource: string, name: string): StatusDetails {
  const details: StatusDetails = { kind: resource };
  if (name !== "") details.name = name;
  if (group !== "") details.group = group;
  return details;
}

export function notFound(group: string, resource: string, name: string): ApiError {
  return new ApiError(
    404,
    "NotFound",
    `${qualifiedResource(group, resource)} "${name}" not found`,
    resourceDetails(group, resource, name),
  );
}

export function alreadyExists(group: string, resource: string, name: string): ApiError {
  return new ApiError(
    409,
    "AlreadyExists",
    `${qualifiedResource(group, resource)} "${name}" already exists`,
    resourceDetails(group, resource, name),
  );
}

export function conflict(group: string, resource: string, name: string, why: string): ApiError {
  return new ApiError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(group, resource)} "${name}": ${why}`,
    resourceDetails(group, resource, name),
  );
}

export const OPTIMISTIC_LOCK_MESSAGE =
  "the object has been modified; please apply your changes to the latest version and try again";

/** 422 with upstream's message shape `<Kind>[.group] "<name>" is invalid: <field>: <reason>`. */
export function invalid(group: string, kind: string, name: string, causes: FieldCause[]): ApiError {
  const qualifiedKind = group === "" ? kind : `${kind}.${group}`;
  const parts = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const aggregate = parts.length === 1 ? parts[0] : `[${parts.join(", ")}]`;
  const details: StatusDetails = { kind, causes };
  if (name !== "") details.name = name;
  if (group !== "") details.group = group;
  return new ApiError(422, "Invalid", `${qualifiedKind} "${name}" is invalid: ${aggregate}`, details);
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, "BadRequest", message);
}

export function forbidden(message: string, details?: StatusDetails): ApiError {
  return new ApiError(403, "Forbidden", message, details);
}

export function unauthorized(): ApiError {
  return new ApiError(401, "Unauthorized", "Unauthorized");
}

/** Unknown path: the same answer upstream's not-found handler gives. */
export function pathNotFound(): ApiError {
  return new ApiError(404, "NotFound", "the server could not find the requested resource", {});
}

export function methodNotAllowed(group: string, resource: string, verb: string): ApiError {
  return new ApiError(
    405,
    "MethodNotAllowed",
    `${verb} is not supported on resources of kind "${qualifiedResource(group, resource)}"`,
    resourceDetails(group, resource, ""),
  );
}

/** 410: a watch or list from a compacted revision. */
export function expired(message: string): ApiError {
  return new ApiError(410, "Expired", message);
}

export function tooOldResourceVersion(requested: number, oldest: number): ApiError {
  return expired(`too old resource version: ${requested} (${oldest})`);
}

export function unsupportedMediaType(accepted: readonly string[]): ApiError {
  return new ApiError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`,
  );
}

export function entityTooLarge(limit: number): ApiError {
  return new ApiError(413, "RequestEntityTooLarge", `Request entity too large: limit is ${limit}`);
}

export function internalError(message: string): ApiError {
  return new ApiError(500, "InternalError", `Internal error occurred: ${message}`, {
    causes: [{ reason: "", field: "", message }],
  });
}

/** A Success Status, as upstream returns for an immediate delete of most resources. */
export function successStatus(details: StatusDetails): Status {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details, code: 200 };
}
