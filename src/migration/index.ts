// The CSI migration library (upstream k8s.io/csi-translation-lib, at Kubernetes 1.32): pure
// translations between in-tree volume plugins' objects and their CSI twins, the plugin table,
// and the migration feature gates with the per-node decisions built on them. Imports only
// src/api and src/base; never modifies its input.
export * from "./errors.ts";
export * from "./types.ts";
export * from "./topology.ts";
export * from "./plugins/index.ts";
export * from "./translator.ts";
export * from "./features.ts";
export * from "./manifests.ts";
