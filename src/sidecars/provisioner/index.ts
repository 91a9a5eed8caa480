// The provisioner sidecar (`csikit provisioner`): a drop-in external-provisioner. See
// docs/provisioner.md and controller.ts.
export { startProvisioner } from "./controller.ts";
export { FEATURE_GATE_DEFAULTS } from "./options.ts";
export type {
  ProvisionerOptions,
  ProvisionerFeatures,
  NodeDeploymentOptions,
  CapacityOptions,
} from "./options.ts";
export { PROVISIONER_FLAGS, provisionerOptionsFromFlags } from "./flags.ts";
export { IN_FLIGHT_FINALIZER } from "./finalizers.ts";
// Which secrets a StorageClass names (`csikit up` grants its sidecars exactly those).
export { secretTemplates, type SecretKind } from "./parameters.ts";
// The capacity controller on its own, for its tests (test/harness/capacity.ts) and embedders.
export { startCapacityController, type CapacityControllerOptions } from "./capacity/index.ts";
