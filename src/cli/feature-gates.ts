// `--feature-gates` of the commands whose upstream twins take CSI migration's gates
// (kube-controller-manager → `csikit controllers`, kubelet → `csikit node`): one flag spec and
// one parser, both from src/migration's gate table.

import { FlagError, type FlagSpec, type Flags } from "../base/index.ts";
import { featureGatesHelp, parseFeatureGatesFlag, type FeatureGates } from "../migration/index.ts";

export const FEATURE_GATES_FLAG: FlagSpec = {
  type: "map",
  help: `A set of key=value pairs that describe feature gates for alpha/experimental features. Options are: ${featureGatesHelp()}.`,
};

/** --feature-gates resolved against the 1.32 migration gates; a bad gate is a FlagError. */
export function featureGates(flags: Flags): FeatureGates {
  try {
    return parseFeatureGatesFlag(flags.map("feature-gates"));
  } catch (error) {
    throw new FlagError(`flag -feature-gates: ${(error as Error).message}`);
  }
}
