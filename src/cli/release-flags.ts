// `--kubernetes-version` and `--feature-gates` as kube-apiserver reads them: the release a
// command acts as and its storage gates (src/api/releases.ts). Shared by `csikit apiserver`,
// `up`, and the controllers' and node's flags; loads no server or client code.

import { FlagError } from "../base/index.ts";
import {
  DEFAULT_KUBERNETES_MINOR,
  KUBERNETES_MINORS,
  kubeFeatureGatesHelp,
  kubeRelease,
  parseKubernetesMinor,
  type KubeRelease,
  type KubernetesMinor,
} from "../api/index.ts";
import type { Flags, FlagSpecs } from "../base/index.ts";

/**
 * --kubernetes-version and --feature-gates as one release: the minor picks the gates known and
 * their defaults, the flag's values override them; errors name the flag.
 */
export function releaseFromFlags(flags: Flags): KubeRelease {
  const minor = kubernetesMinorFlag(flags);
  try {
    return kubeRelease(minor, flags.map("feature-gates"));
  } catch (error) {
    throw new FlagError(`flag -feature-gates: ${(error as Error).message}`);
  }
}

/** --kubernetes-version, parsed; a bad value is a FlagError naming the flag. */
export function kubernetesMinorFlag(flags: Flags): KubernetesMinor {
  try {
    return parseKubernetesMinor(flags.string("kubernetes-version"));
  } catch (error) {
    throw new FlagError(`invalid value for flag -kubernetes-version: ${(error as Error).message}`);
  }
}

/** The two flags of `csikit apiserver` (`csikit up` takes --kubernetes-version). */
export const RELEASE_FLAGS = {
  "kubernetes-version": {
    type: "string",
    default: DEFAULT_KUBERNETES_MINOR,
    help:
      `The Kubernetes release to act as: ${KUBERNETES_MINORS.join(", ")} (a patch such as 1.37.2 is read as its minor). ` +
      "It sets /version, the served group versions (storage.k8s.io/v1 VolumeAttributesClass from 1.34) and the " +
      "feature gates' defaults to that release's.",
  },
  "feature-gates": {
    type: "map",
    help:
      "A set of key=value pairs that describe feature gates for alpha/experimental features, as kube-apiserver's " +
      "flag; the storage and CSI gates are known, any other name is an error. Options at " +
      `${DEFAULT_KUBERNETES_MINOR} (other releases differ): ${kubeFeatureGatesHelp()}.`,
  },
} satisfies FlagSpecs;
