// The embedded Kubernetes-compatible API server. Other folders reach it only through this
// file, and only to start it: every component talks to it over HTTPS like to a real one.

export { startApiServer, runApiServer, DEFAULT_BOOKMARK_INTERVAL_MS } from "./server.ts";
export type { ApiServerOptions, ApiServerHandle } from "./server.ts";
export { FaultInjector } from "./faults.ts";
export type { FaultSpec } from "./faults.ts";
export { SYSTEM_NAMESPACES } from "./namespaces.ts";
export { MAX_BODY_BYTES } from "./http.ts";
export type { ResourceDef, ResourceRegistry } from "./resource.ts";
export { createBuiltinRegistry } from "./registry.ts";
export type { MutableResourceRegistry } from "./registry.ts";
export { KUBECONFIG_CONTEXT } from "./kubeconfig.ts";
export { admissionChain, ADMISSION_PLUGINS, DEFAULT_ADMISSION_PLUGINS } from "./admission.ts";
export type { AdmissionPlugin } from "./admission.ts";
export { AUTHORIZATION_MODES } from "./authz.ts";
export type { AuthorizationMode } from "./authz.ts";
