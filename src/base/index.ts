// The base layer: clock, backoff, abort helpers, coded errors, logger, Go-style flags.
// Imports only node: builtins.
export * from "./errors.ts";
export * from "./clock.ts";
export * from "./backoff.ts";
export * from "./abort.ts";
export * from "./logger.ts";
export * from "./flags.ts";
export * from "./klog-flags.ts";
