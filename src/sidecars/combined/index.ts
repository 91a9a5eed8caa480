// The all-in-one forms (`csikit sidecars`, `csikit node-sidecars`): several sidecars in one
// process, sharing the CSI connection, the informers and the diagnostics endpoint, each with
// its own identity for writes. See controller.ts and flags.ts.
export {
  runSidecars,
  SIDECAR_COMPONENTS,
  type SidecarComponent,
  type SidecarsOptions,
} from "./controller.ts";
export { CONTROLLER_SIDECARS, NODE_SIDECARS, type NodeSidecarComponent } from "./components.ts";
export { SHARED_SIDECAR_FLAGS, componentFlags, namespacedFlags } from "./flags.ts";
