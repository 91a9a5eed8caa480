// Helpers the controller loops share: the latest-objects view over a cache and the pod →
// claims index.
export * from "./latest.ts";
export * from "./pod-claims.ts";
