// Auditing, as kube-apiserver's audit backends see it: one audit.k8s.io/v1 Event per
// authenticated request at stage ResponseComplete and level Metadata (who, which verb on which
// object, the answer's code, the authorizer's decision; never a body). A backend receives each
// event after the response is sent. What reads them: the RBAC coverage test (every request each
// component identity makes, and every 403), and anyone asking "who did this" of a cluster.

import type { RequestAttributes } from "./authz.ts";

export interface AuditEvent {
  kind: "Event";
  apiVersion: "audit.k8s.io/v1";
  level: "Metadata";
  stage: "ResponseComplete";
  requestURI: string;
  verb: string;
  user: { username: string; groups: string[] };
  userAgent?: string;
  /** Resource requests only (kube-apiserver omits it for /api, /healthz and the like). */
  objectRef?: {
    resource: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
    subresource?: string;
  };
  responseStatus: { code: number };
  annotations: { "authorization.k8s.io/decision": "allow" | "forbid" };
}

/** Receives each event once its response was sent; must not throw and must not block. */
export type AuditBackend = (event: AuditEvent) => void;

/** The event of one request, from the attributes the authorizer judged. */
export function auditEvent(
  attributes: RequestAttributes,
  request: { uri: string; userAgent: string | undefined; code: number; allowed: boolean },
): AuditEvent {
  return {
    kind: "Event",
    apiVersion: "audit.k8s.io/v1",
    level: "Metadata",
    stage: "ResponseComplete",
    requestURI: request.uri,
    verb: attributes.verb,
    user: { username: attributes.user.username, groups: [...attributes.user.groups] },
    ...(request.userAgent !== undefined ? { userAgent: request.userAgent } : {}),
    ...(attributes.resourceRequest ? { objectRef: objectRef(attributes) } : {}),
    responseStatus: { code: request.code },
    annotations: { "authorization.k8s.io/decision": request.allowed ? "allow" : "forbid" },
  };
}

function objectRef(attributes: RequestAttributes): NonNullable<AuditEvent["objectRef"]> {
  const ref: NonNullable<AuditEvent["objectRef"]> = { resource: attributes.resource };
  if (attributes.namespace !== "") ref.namespace = attributes.namespace;
  if (attributes.name !== "") ref.name = attributes.name;
  if (attributes.apiGroup !== "") ref.apiGroup = attributes.apiGroup;
  if (attributes.subresource !== "") ref.subresource = attributes.subresource;
  return ref;
}
