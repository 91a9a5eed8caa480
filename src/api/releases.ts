// The Kubernetes releases csikit can act as (`--kubernetes-version`), and the storage and CSI
// feature gates of each: the gates' names, stages and defaults per minor as upstream's
// pkg/features/kube_features.go versions them and the kubernetes.io feature-gate reference
// lists them. The table holds the gates csikit's components act on or accept (storage, CSI,
// volumes), not kube's ~200 others: a gate outside it is an error naming it, as an unknown
// gate is upstream.
//
// One table serves every component that takes kube's --feature-gates, so an API server, a
// controller manager and a node told the same release agree on what is on.

export const KUBERNETES_MINORS = ["1.32", "1.33", "1.34", "1.35", "1.36", "1.37"] as const;
export type KubernetesMinor = (typeof KUBERNETES_MINORS)[number];

/** What `csikit up` and `csikit apiserver` act as unless told otherwise. */
export const DEFAULT_KUBERNETES_MINOR: KubernetesMinor = "1.37";

/**
 * The patch release each minor reports in /version. Chosen as plausible patches of late 2026
 * (1.37.0 came out 2026-08-26; upstream ships a patch about monthly), not a claim that csikit
 * carries that patch's fixes.
 */
const PATCH: Readonly<Record<KubernetesMinor, number>> = {
  "1.32": 13,
  "1.33": 9,
  "1.34": 6,
  "1.35": 4,
  "1.36": 3,
  "1.37": 2,
};

export type GateStage = "ALPHA" | "BETA" | "GA" | "DEPRECATED";

export interface KubeGateSpec {
  readonly default: boolean;
  readonly stage: GateStage;
  /** A locked gate may only be set to its default (GA gates upstream locks, removed code paths). */
  readonly locked: boolean;
}

/** One step of a gate's history: from `since` on (until the next step) the gate is so. */
interface GateStep extends KubeGateSpec {
  readonly since: KubernetesMinor;
}

function step(since: KubernetesMinor, stage: GateStage, on: boolean, locked = false): GateStep {
  return { since, stage, default: on, locked };
}
const alpha = (since: KubernetesMinor) => step(since, "ALPHA", false);
const betaOff = (since: KubernetesMinor) => step(since, "BETA", false);
const betaOn = (since: KubernetesMinor) => step(since, "BETA", true);
const ga = (since: KubernetesMinor, locked = true) => step(since, "GA", true, locked);

/**
 * Each gate's steps in release order; a gate is unknown before its first step. A gate whose
 * first step is before 1.32 is listed from 1.32 with the stage it had then.
 */
const GATE_HISTORY: Readonly<Record<string, readonly GateStep[]>> = {
  // KEP-1495 volume populators.
  AnyVolumeDataSource: [betaOn("1.32"), ga("1.33")],
  // KEP-2589 Portworx migration (src/migration reads these two).
  CSIMigrationPortworx: [betaOn("1.32"), ga("1.33")],
  InTreePluginPortworxUnregister: [alpha("1.32")],
  // KEP-5538 ServiceAccount tokens in NodePublishVolume secrets (CSIDriver.serviceAccountTokenInSecrets).
  CSIServiceAccountTokenSecrets: [betaOn("1.35"), ga("1.36")],
  // KEP-1432: never graduated; reset to a new alpha design in 1.37.
  CSIVolumeHealth: [alpha("1.32")],
  CrossNamespaceVolumeDataSource: [alpha("1.32")],
  // KEP-5040: the gitRepo volume driver, off from 1.33 and for good from 1.36.
  GitRepoVolumeDriver: [step("1.33", "DEPRECATED", false), step("1.36", "DEPRECATED", false, true)],
  // KEP-2644 finalizers that honour the reclaim policy.
  HonorPVReclaimPolicy: [betaOn("1.32"), ga("1.33")],
  // KEP-4639 OCI image volumes.
  ImageVolume: [alpha("1.32"), betaOff("1.33"), betaOn("1.35"), ga("1.36")],
  // KEP-4876: CSINode allocatable.count mutable, CSIDriver.nodeAllocatableUpdatePeriodSeconds,
  // VolumeError.errorCode.
  MutableCSINodeAllocatableCount: [alpha("1.33"), betaOff("1.34"), betaOn("1.35"), ga("1.36")],
  // KEP-5381 PersistentVolume spec.nodeAffinity mutable.
  MutablePVNodeAffinity: [alpha("1.35")],
  // KEP-5541 the PVC "unused since" condition.
  PersistentVolumeClaimUnusedSinceTime: [alpha("1.36"), betaOn("1.37")],
  // KEP-1790 PVC status allocatedResourceStatuses / allocatedResources and shrinking a failed expansion.
  RecoverVolumeExpansionFailure: [betaOn("1.32"), ga("1.34")],
  // KEP-3857 recursive read-only mounts.
  RecursiveReadOnlyMounts: [betaOn("1.32"), ga("1.33")],
  // KEP-1710 SELinux relabelling with mount options.
  SELinuxChangePolicy: [alpha("1.32"), betaOn("1.33"), ga("1.36")],
  // GA and on in 1.37 but not locked until 1.38: a cluster may still turn it off.
  SELinuxMount: [alpha("1.32"), betaOff("1.33"), ga("1.37", false)],
  SELinuxMountReadWriteOncePod: [betaOn("1.32"), ga("1.36")],
  // KEP-1847 StatefulSet PVC retention.
  StatefulSetAutoDeletePVC: [ga("1.32")],
  // KEP-4049 scoring nodes by CSIStorageCapacity.
  StorageCapacityScoring: [alpha("1.33"), betaOn("1.37")],
  // KEP-3751 VolumeAttributesClass (storage.k8s.io/v1 from 1.34).
  VolumeAttributesClass: [betaOff("1.32"), ga("1.34")],
  // KEP-5030 CSIDriver.preventPodSchedulingIfMissing.
  VolumeLimitScaling: [alpha("1.35"), betaOn("1.37")],
};

/** Gates that existed upstream but no longer do at any release csikit can act as. */
const REMOVED_GATES: Readonly<Record<string, string>> = {
  CSIMigration: "GA and removed upstream: CSI migration is always on",
  CSINodeExpandSecret: "GA in 1.29 and removed upstream",
  ReadWriteOncePod: "GA in 1.29 and removed upstream",
  PersistentVolumeLastPhaseTransitionTime: "GA in 1.31 and removed upstream",
};

function minorIndex(minor: KubernetesMinor): number {
  return KUBERNETES_MINORS.indexOf(minor);
}

/** The gates a release knows, with their stage and default there. */
export function kubeFeatureGatesAt(minor: KubernetesMinor): Readonly<Record<string, KubeGateSpec>> {
  const at = minorIndex(minor);
  const gates: Record<string, KubeGateSpec> = {};
  for (const [name, steps] of Object.entries(GATE_HISTORY)) {
    let current: GateStep | undefined;
    for (const candidate of steps) if (minorIndex(candidate.since) <= at) current = candidate;
    if (current !== undefined)
      gates[name] = Object.freeze({ default: current.default, stage: current.stage, locked: current.locked });
  }
  return Object.freeze(gates);
}

export class KubeVersionError extends Error {
  override name = "KubeVersionError";
}

/**
 * A `--kubernetes-version` value: "1.37", "v1.37" or a patch ("1.37.2", "v1.37.2") of a minor
 * csikit can act as.
 */
export function parseKubernetesMinor(text: string): KubernetesMinor {
  const match = /^v?(1\.\d+)(?:\.\d+)?$/.exec(text.trim());
  const minor = match?.[1];
  if (minor === undefined || !(KUBERNETES_MINORS as readonly string[]).includes(minor)) {
    throw new KubeVersionError(
      `unsupported Kubernetes version ${JSON.stringify(text)}: want one of ${KUBERNETES_MINORS.join(", ")}`,
    );
  }
  return minor as KubernetesMinor;
}

/** The resolved gates of one component: every gate its release knows has a value. */
export type KubeFeatureGates = Readonly<Record<string, boolean>>;

/**
 * `--feature-gates` values (Name → "true"/"false", as a map flag parses them) resolved against a
 * release's gates: an unknown or removed gate, a value other than true/false, or a locked gate
 * set away from its default is an error naming the gate, as component-base rejects them.
 */
export function resolveKubeFeatureGates(
  minor: KubernetesMinor,
  requested: Readonly<Record<string, string | boolean>> = {},
): KubeFeatureGates {
  const known = kubeFeatureGatesAt(minor);
  const gates: Record<string, boolean> = {};
  for (const [name, spec] of Object.entries(known)) gates[name] = spec.default;
  for (const [name, raw] of Object.entries(requested)) {
    const spec = known[name];
    if (spec === undefined) {
      const removed = REMOVED_GATES[name];
      const later = GATE_HISTORY[name]?.[0]?.since;
      const why =
        removed ?? (later !== undefined ? `introduced in Kubernetes ${later}, not in ${minor}` : undefined);
      throw new KubeVersionError(`unrecognized feature gate: ${name}${why !== undefined ? ` (${why})` : ""}`);
    }
    const text = String(raw).toLowerCase();
    if (text !== "true" && text !== "false")
      throw new KubeVersionError(`invalid value of ${name}=${String(raw)}, want true or false`);
    const value = text === "true";
    if (spec.locked && value !== spec.default) {
      throw new KubeVersionError(
        `cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`,
      );
    }
    gates[name] = value;
  }
  return Object.freeze(gates);
}

/** The `Name=true|false (STAGE - default=…)` list a --feature-gates help shows for a release. */
export function kubeFeatureGatesHelp(minor: KubernetesMinor = DEFAULT_KUBERNETES_MINOR): string {
  return Object.entries(kubeFeatureGatesAt(minor))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, spec]) => `${name}=true|false (${spec.stage} - default=${spec.default})`)
    .join(", ");
}

/** The release a component acts as: its minor, its /version and its resolved gates. */
export interface KubeRelease {
  readonly minor: KubernetesMinor;
  /** "v1.37.2" */
  readonly gitVersion: string;
  readonly gates: KubeFeatureGates;
}

export function kubeRelease(
  minor: KubernetesMinor = DEFAULT_KUBERNETES_MINOR,
  featureGates: Readonly<Record<string, string | boolean>> = {},
): KubeRelease {
  return Object.freeze({
    minor,
    gitVersion: `v${minor}.${PATCH[minor]}`,
    gates: resolveKubeFeatureGates(minor, featureGates),
  });
}

/** Whether `minor` is `since` or later. */
export function isKubeAtLeast(minor: KubernetesMinor, since: KubernetesMinor): boolean {
  return minorIndex(minor) >= minorIndex(since);
}
