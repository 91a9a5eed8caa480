// `--feature-gates` and `--kubernetes-version` of the commands whose upstream twins are
// Kubernetes components (kube-controller-manager → `csikit controllers`, kubelet → `csikit
// node`): the gates known are the release's storage gates (src/api/releases.ts) plus CSI
// migration's (src/migration), with the release's defaults.

import { FlagError, type FlagSpec, type Flags } from "../base/index.ts";
import { kubeFeatureGatesHelp, resolveKubeFeatureGates, type KubernetesMinor } from "../api/index.ts";
import {
  MIGRATION_FEATURE_GATES,
  parseFeatureGatesFlag,
  REMOVED_MIGRATION_FEATURE_GATES,
  type FeatureGates,
} from "../migration/index.ts";
import { kubernetesMinorFlag, RELEASE_FLAGS } from "./release-flags.ts";

export const FEATURE_GATES_FLAG: FlagSpec = {
  type: "map",
  help:
    "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are " +
    `(defaults of the --kubernetes-version release; these are 1.37's): ${kubeFeatureGatesHelp()}.`,
};

/** csikit's: upstream's components are one release each; csikit's can act as any of six. */
export const KUBERNETES_VERSION_FLAG: FlagSpec = {
  ...RELEASE_FLAGS["kubernetes-version"],
  help:
    `csikit's own: the Kubernetes release (${RELEASE_FLAGS["kubernetes-version"].default} by default) this ` +
    "component acts as — which storage feature gates it knows and their defaults, so the behaviour of that " +
    "release's kube-controller-manager or kubelet (a patch such as 1.37.2 is read as its minor).",
};

/**
 * --feature-gates resolved against --kubernetes-version's gates (CSI migration's included); a
 * bad or unknown gate, or a locked one set away from its default, is a FlagError naming it.
 */
export function featureGates(
  flags: Flags,
  minor: KubernetesMinor = kubernetesMinorFlag(flags),
): FeatureGates {
  const requested = flags.map("feature-gates");
  // Migration gates removed upstream keep migration's resolver: it says why each is gone.
  const removedMigration = Object.keys(requested).filter((name) => name in REMOVED_MIGRATION_FEATURE_GATES);
  try {
    if (removedMigration.length > 0)
      parseFeatureGatesFlag(
        Object.fromEntries(removedMigration.map((name) => [name, requested[name] ?? ""])),
      );
    const migrationDefaults = parseFeatureGatesFlag({}, MIGRATION_FEATURE_GATES);
    return Object.freeze({ ...migrationDefaults, ...resolveKubeFeatureGates(minor, requested) });
  } catch (error) {
    throw new FlagError(`flag -feature-gates: ${(error as Error).message}`);
  }
}
