// The attacher sidecar (`csikit attacher`): a drop-in external-attacher. See docs/attacher.md
// and controller.ts.
export { runAttacher, startAttacher, type AttacherHandle } from "./controller.ts";
export { ATTACHER_FEATURE_GATE_DEFAULTS, type AttacherOptions } from "./options.ts";
export { ATTACHER_FLAGS, attacherOptionsFromFlags } from "./flags.ts";
