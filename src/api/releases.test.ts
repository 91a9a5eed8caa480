// The release table: gate defaults per minor, locked GA gates, unknown and not-yet-existing
// gates named in the error, --kubernetes-version parsing.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  kubeFeatureGatesAt,
  kubeRelease,
  parseKubernetesMinor,
  resolveKubeFeatureGates,
} from "./releases.ts";

test("1.37's storage gates and their defaults", () => {
  const gates = kubeRelease().gates;
  assert.equal(kubeRelease().minor, "1.37");
  assert.match(kubeRelease().gitVersion, /^v1\.37\.\d+$/);
  assert.equal(gates.VolumeAttributesClass, true);
  assert.equal(gates.MutableCSINodeAllocatableCount, true);
  assert.equal(gates.CSIServiceAccountTokenSecrets, true);
  assert.equal(gates.VolumeLimitScaling, true);
  assert.equal(gates.SELinuxMount, true);
  assert.equal(gates.MutablePVNodeAffinity, false);
  assert.equal(gates.PersistentVolumeClaimUnusedSinceTime, true);
  assert.equal(kubeFeatureGatesAt("1.37").SELinuxMount?.locked, false, "GA in 1.37, locked from 1.38");
  assert.equal(kubeFeatureGatesAt("1.37").VolumeAttributesClass?.locked, true);
});

test("each release's defaults: a gate's stage moves with the minor", () => {
  assert.equal(kubeRelease("1.32").gates.VolumeAttributesClass, false);
  assert.equal(kubeRelease("1.34").gates.VolumeAttributesClass, true);
  assert.equal(kubeRelease("1.34").gates.MutableCSINodeAllocatableCount, false);
  assert.equal(kubeRelease("1.35").gates.MutableCSINodeAllocatableCount, true);
  assert.equal(kubeFeatureGatesAt("1.35").MutableCSINodeAllocatableCount?.stage, "BETA");
  assert.equal(kubeFeatureGatesAt("1.36").MutableCSINodeAllocatableCount?.stage, "GA");
  assert.equal(kubeFeatureGatesAt("1.32").MutableCSINodeAllocatableCount, undefined);
  assert.equal(kubeRelease("1.36").gates.VolumeLimitScaling, false);
});

test("--feature-gates: overrides, unknown names, locked GA gates, bad values", () => {
  assert.equal(
    resolveKubeFeatureGates("1.37", { MutablePVNodeAffinity: "true" }).MutablePVNodeAffinity,
    true,
  );
  assert.equal(resolveKubeFeatureGates("1.37", { SELinuxMount: "false" }).SELinuxMount, false);
  assert.throws(
    () => resolveKubeFeatureGates("1.37", { NoSuchGate: "true" }),
    /unrecognized feature gate: NoSuchGate/,
  );
  assert.throws(
    () => resolveKubeFeatureGates("1.32", { MutablePVNodeAffinity: "true" }),
    /unrecognized feature gate: MutablePVNodeAffinity \(introduced in Kubernetes 1\.35, not in 1\.32\)/,
  );
  assert.throws(
    () => resolveKubeFeatureGates("1.37", { VolumeAttributesClass: "false" }),
    /cannot set feature gate VolumeAttributesClass to false, feature is locked to true/,
  );
  // Not yet GA at 1.33: may be turned on.
  assert.equal(
    resolveKubeFeatureGates("1.33", { VolumeAttributesClass: "true" }).VolumeAttributesClass,
    true,
  );
  assert.throws(() => resolveKubeFeatureGates("1.37", { VolumeLimitScaling: "yes" }), /want true or false/);
});

test("--kubernetes-version accepts a minor or a patch, with or without v", () => {
  assert.equal(parseKubernetesMinor("1.34"), "1.34");
  assert.equal(parseKubernetesMinor("v1.36"), "1.36");
  assert.equal(parseKubernetesMinor("1.37.2"), "1.37");
  assert.throws(
    () => parseKubernetesMinor("1.31"),
    /unsupported Kubernetes version "1.31": want one of 1.32, .*1.37/,
  );
  assert.throws(() => parseKubernetesMinor("latest"), /unsupported Kubernetes version/);
});
