// The api layer: Kubernetes object types, GVR constants, the upstream contract tables and pure
// helpers (quantities, names, selectors, keys). No I/O; imports only base.
export type * from "./meta.ts";
export type * from "./core.ts";
export type * from "./storage.ts";
export type * from "./coordination.ts";
export type * from "./apiextensions.ts";
export * from "./gvr.ts";
export * from "./contract.ts";
export * from "./quantity.ts";
export * from "./validation.ts";
export * from "./labels.ts";
export * from "./fields.ts";
export * from "./keys.ts";
export * from "./duration.ts";
