// `csikit up`'s composition root: the whole cluster as supervised child processes.
export { runCluster, DEFAULT_DRIVER_NAME, STORAGE_CLASS } from "./cluster.ts";
export type { UpOptions, RunningCluster } from "./cluster.ts";
export { COMPONENTS, STOP_ORDER, planComponents } from "./components.ts";
export { ClusterLayout, ZONE_LABEL, nodeSpecs } from "./layout.ts";
export { mountsUnder } from "./drain.ts";
export { Supervisor } from "./supervisor.ts";
export { readManifests, applyManifests, RBAC_DIR } from "./manifests.ts";
export { applyCrds, installCrds, CRDS_DIR } from "./crds.ts";
export type { Manifest } from "./manifests.ts";
export {
  clusterOfAdminKubeconfig,
  requestServiceAccountToken,
  writeComponentKubeconfig,
  writeTokenAuthFile,
} from "./identities.ts";
export { runWalkthrough, WALKTHROUGHS } from "./walkthrough.ts";
export type { Walkthrough } from "./walkthrough.ts";
export { inUserMountNamespace, mountProblem, reexecInUserMountNamespace } from "./namespace.ts";
export { pollUntil } from "./poll.ts";
