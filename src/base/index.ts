// The base layer: clock, backoff, abort helpers, coded errors, logger, Go-style flags and
// klog's, Kubernetes quantities (the one parser, byte counts included), private files (atomic
// writes, tightening a state tree), stopping when `up` (the supervisor) is gone.
// Imports only node: builtins.
export * from "./errors.ts";
export * from "./clock.ts";
export * from "./backoff.ts";
export * from "./abort.ts";
export * from "./logger.ts";
export * from "./flags.ts";
export * from "./klog-flags.ts";
export * from "./quantity.ts";
export * from "./json-data.ts";
export * from "./private-files.ts";
export * from "./supervision.ts";
