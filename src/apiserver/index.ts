// The embedded Kubernetes-compatible API server. Other folders reach it only through this
// file, and only to start it: every component talks to it over HTTPS like to a real one.

export { startApiServer, runApiServer, DEFAULT_BOOKMARK_INTERVAL_MS } from "./server.ts";
export type { ApiServerOptions, ApiServerHandle } from "./server.ts";
export { FaultInjector } from "./transport/faults.ts";
export type { FaultSpec, HeldRequest, HoldSpec } from "./transport/faults.ts";
export { SYSTEM_NAMESPACES } from "./admission/namespaces.ts";
export { MAX_BODY_BYTES } from "./transport/http.ts";
export type { ResourceDef, ResourceRegistry } from "./rest/resource.ts";
export { createBuiltinRegistry } from "./registry.ts";
export type { MutableResourceRegistry } from "./registry.ts";
export { KUBECONFIG_CONTEXT } from "./transport/kubeconfig.ts";
export { admissionChain, ADMISSION_PLUGINS, DEFAULT_ADMISSION_PLUGINS } from "./admission/admission.ts";
export type { AdmissionPlugin } from "./admission/admission.ts";
export { AUTHORIZATION_MODES, parseAuthorizationModes } from "./auth/authz.ts";
export type { AuthorizationMode } from "./auth/authz.ts";
export type { AuditBackend, AuditEvent } from "./auth/audit.ts";
