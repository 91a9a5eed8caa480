// The resizer sidecar (`csikit resizer`): a drop-in external-resizer v2.2.1 — controller
// expansion with recovery from failures, handing filesystem expansion to the kubelet, and
// VolumeAttributesClass modification with rollback. See controller.ts.
export { startResizer } from "./controller.ts";
export { RESIZER_FLAGS, resizerOptionsFromFlags } from "./flags.ts";
export { RESIZER_FEATURE_GATE_DEFAULTS } from "./options.ts";
export type { ResizerOptions, ResizerFeatures } from "./options.ts";
export { CONDITION, RESIZE_CONDITIONS } from "./names.ts";
