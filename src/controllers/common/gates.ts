// The loops' view of kube-controller-manager's --feature-gates: a gate's value from the
// resolved gates the loops were given (`csikit controllers --kubernetes-version/--feature-gates`),
// or — for a caller that passed none — its default at the release csikit acts as by default,
// so a loop started without gates behaves as `csikit controllers` with no flags does.

import { DEFAULT_KUBERNETES_MINOR, kubeFeatureGatesAt } from "../../api/index.ts";
import type { FeatureGates } from "../../migration/index.ts";

export function gateEnabled(gates: FeatureGates | undefined, name: string): boolean {
  return gates?.[name] ?? kubeFeatureGatesAt(DEFAULT_KUBERNETES_MINOR)[name]?.default ?? false;
}
