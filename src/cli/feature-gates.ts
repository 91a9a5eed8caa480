// `--feature-gates` of the commands whose upstream twins take CSI migration's gates
// (kube-controller-manager → `csikit controllers`, kubelet → `csikit node`): one flag spec and
// one parser, both from src/migration's gate table, plus CSIVolumeHealth (KEP-1432, alpha, off
// by default), which the node agent reads for the kubelet's volume health reporting.

import { FlagError, type FlagSpec, type Flags } from "../base/index.ts";
import { DEFAULT_KUBERNETES_MINOR, kubeFeatureGatesAt } from "../api/index.ts";
import {
  MIGRATION_FEATURE_GATES,
  featureGatesHelp,
  parseFeatureGatesFlag,
  type FeatureGateSpec,
  type FeatureGates,
} from "../migration/index.ts";

/** The gates these commands know: migration's and CSIVolumeHealth as the default release has it. */
export const COMPONENT_FEATURE_GATES: Readonly<Record<string, FeatureGateSpec>> = Object.freeze({
  ...MIGRATION_FEATURE_GATES,
  CSIVolumeHealth: kubeFeatureGatesAt(DEFAULT_KUBERNETES_MINOR).CSIVolumeHealth ?? {
    default: false,
    stage: "ALPHA",
    locked: false,
  },
});

export const FEATURE_GATES_FLAG: FlagSpec = {
  type: "map",
  help: `A set of key=value pairs that describe feature gates for alpha/experimental features. Options are: ${featureGatesHelp(COMPONENT_FEATURE_GATES)}.`,
};

/** --feature-gates resolved against COMPONENT_FEATURE_GATES; a bad gate is a FlagError. */
export function featureGates(flags: Flags): FeatureGates {
  try {
    return parseFeatureGatesFlag(flags.map("feature-gates"), COMPONENT_FEATURE_GATES);
  } catch (error) {
    throw new FlagError(`flag -feature-gates: ${(error as Error).message}`);
  }
}
