// The node's feature gates: what `csikit node` resolved from --kubernetes-version and
// --feature-gates, or, when started without them (tests, embedding), the default release's
// storage gates plus CSI migration's — the same set `csikit node` with no flags would get.

import { DEFAULT_KUBERNETES_MINOR, resolveKubeFeatureGates } from "../api/index.ts";
import { resolveFeatureGates, type FeatureGates } from "../migration/index.ts";

/** The gates names of the storage features the node acts on (src/api/releases.ts). */
export const NODE_GATES = {
  csiServiceAccountTokenSecrets: "CSIServiceAccountTokenSecrets",
  mutableCSINodeAllocatableCount: "MutableCSINodeAllocatableCount",
  seLinuxMount: "SELinuxMount",
  seLinuxMountReadWriteOncePod: "SELinuxMountReadWriteOncePod",
  seLinuxChangePolicy: "SELinuxChangePolicy",
  recursiveReadOnlyMounts: "RecursiveReadOnlyMounts",
} as const;

export function nodeFeatureGates(given: FeatureGates | undefined): FeatureGates {
  if (given !== undefined) return given;
  return Object.freeze({ ...resolveFeatureGates({}), ...resolveKubeFeatureGates(DEFAULT_KUBERNETES_MINOR) });
}

/** A gate absent from the set (a release that does not know it) is off. */
export function gateOn(gates: FeatureGates, name: string): boolean {
  return gates[name] === true;
}
