// The api layer: Kubernetes object types, GVR constants, the upstream contract tables and pure
// helpers (quantities, names, selectors, keys). No I/O; imports only base.
export type * from "./meta.ts";
export type * from "./core.ts";
export type * from "./storage.ts";
export type * from "./snapshot.ts";
export type * from "./coordination.ts";
export type * from "./apiextensions.ts";
export type * from "./rbac.ts";
export type * from "./statefulset.ts";
export type * from "./workloads.ts";
export { WORKLOAD_NAMES } from "./workloads.ts";
export * from "./gvr.ts";
export * from "./contract.ts";
// Quantities live in src/base (the one implementation, also for byte flags in components that
// may not import api); api re-exports them as part of the object model.
export {
  addQuantities,
  canonicalQuantity,
  compareQuantities,
  formatQuantity,
  parseQuantity,
  quantityFromValue,
  quantityMilliValue,
  quantityValue,
  subtractQuantities,
  tryParseQuantity,
  type Quantity,
  type QuantityFormat,
} from "../base/index.ts";
export * from "./validation.ts";
export * from "./labels.ts";
export * from "./fields.ts";
export * from "./keys.ts";
export * from "./duration.ts";
export * from "./ephemeral.ts";
export * from "./releases.ts";
