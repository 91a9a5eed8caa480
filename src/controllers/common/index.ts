// Helpers the controller loops share: the latest-objects view over a cache and the pod →
// claims index, the owner reference controllers put on what they create, the feature gates.
export * from "./latest.ts";
export * from "./pod-claims.ts";
export * from "./owner-ref.ts";
export * from "./gates.ts";
