// kubernetes.io/vac-protection from the real `csikit controllers` process under its own identity
// (deploy/rbac/): a new VolumeAttributesClass gets the finalizer; deleted while a claim names it,
// it stays (Terminating) until that claim is gone; a class named only by a volume stays until
// the volume goes; an unused class goes at once (the claim and volume protection loops run too,
// so deleting them completes). Checked at the release's served version (v1).
import { test } from "node:test";
import assert from "node:assert/strict";
import { FINALIZERS, GVR, type VolumeAttributesClass } from "../../api/index.ts";
import { isNotFound } from "../../kube/index.ts";
import { NS, pv, pvc, startControllersCluster } from "../../../test/harness/controllers.ts";
import { spawnComponent } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";

const VAC = Object.freeze({ ...GVR.volumeAttributesClasses, version: "v1" });
const vac = (name: string): VolumeAttributesClass => ({
  apiVersion: "storage.k8s.io/v1",
  kind: "VolumeAttributesClass",
  metadata: { name },
  driverName: "hostpath.csi.k8s.io",
  parameters: { iops: "3000" },
});

test("controllers: VolumeAttributesClasses keep kubernetes.io/vac-protection while a claim or volume names them", async (t) => {
  const cluster = await startControllersCluster(t);
  const { admin } = cluster;
  const controllers = spawnComponent(t, {
    name: "controllers-vac",
    subcommand: "controllers",
    args: [
      `--kubeconfig=${cluster.controllersKubeconfig}`,
      "--controllers=volumeattributesclass-protection-controller,pvc-protection,pv-protection",
      "--leader-elect=false",
      "--secure-port=0",
    ],
  });
  const finalizerOf = async (name: string): Promise<string[] | "gone"> => {
    try {
      return (await admin.get<VolumeAttributesClass>(VAC, name)).metadata?.finalizers ?? [];
    } catch (error) {
      if (isNotFound(error)) return "gone";
      throw error;
    }
  };
  const protectedNow = (name: string) =>
    until(async () => {
      const finalizers = await finalizerOf(name);
      return finalizers !== "gone" && finalizers.includes(FINALIZERS.vacProtection.key);
    }, `class ${name} protected`).catch((error: unknown) => {
      throw new Error(`${String(error)}\ncontrollers' output:\n${controllers.output()}`);
    });
  const gone = (name: string) =>
    until(async () => (await finalizerOf(name)) === "gone", `class ${name} gone`);

  for (const name of ["by-claim", "by-volume", "unused"]) await admin.create(VAC, vac(name));
  for (const name of ["by-claim", "by-volume", "unused"]) await protectedNow(name);

  await admin.create(
    GVR.persistentVolumeClaims,
    pvc("modified", { volumeAttributesClassName: "by-claim", storageClassName: "none" }),
  );
  await admin.create(
    GVR.persistentVolumes,
    pv("attributed", { volumeAttributesClassName: "by-volume", storageClassName: "none" }),
  );

  await admin.delete(VAC, "unused");
  await gone("unused");

  await admin.delete(VAC, "by-claim");
  await admin.delete(VAC, "by-volume");
  // The claim and the volume still name them: Terminating, finalizer held. The unused class
  // above went through the same loop after these were queued, so this is not a timeout's guess.
  for (const name of ["by-claim", "by-volume"]) {
    const held = await admin.get<VolumeAttributesClass>(VAC, name);
    assert.ok(held.metadata?.deletionTimestamp, `${name} is being deleted`);
    assert.deepEqual(held.metadata?.finalizers, [FINALIZERS.vacProtection.key]);
  }

  await admin.delete(GVR.persistentVolumeClaims, "modified", { namespace: NS });
  await gone("by-claim");
  assert.notEqual(await finalizerOf("by-volume"), "gone", "the volume still names by-volume");
  await admin.delete(GVR.persistentVolumes, "attributed");
  await gone("by-volume");
});
