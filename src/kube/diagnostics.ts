// kube's second entry point, for processes that never talk to the API server (the registrar,
// the livenessprobe): the sidecar flags, CSI call metrics, the diagnostics HTTP endpoint and
// pprof, without loading @kubernetes/client-node (index.ts loads it through client.ts). Each
// node of a cluster runs these processes, so the client's start-up time and memory would be
// paid once per node for nothing (CONVENTIONS.md "Lean processes"). Everything here is also
// exported by index.ts; nothing here may import client.ts, errors.ts or what needs them.
export * from "./flags.ts";
export * from "./metrics.ts";
export * from "./prom.ts";
export * from "./http-endpoint.ts";
export * from "./secure-serving.ts";
export * from "./delegated-auth.ts";
export * from "./serving-cert.ts";
export * from "./pprof.ts";
