// Upstream's volume-modify suite (test/e2e/storage/testsuites/volume_modify.go): a claim made
// with a VolumeAttributesClass, or moved to one (from none, or from another), ends with the class
// as status.currentVolumeAttributesClassName, no modification in progress, and its PV carrying
// the class; a move to a class the driver refuses fails, and moving on to a valid class recovers;
// a class in use is kept (kubernetes.io/vac-protection) until nothing names it.

import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import {
  GVR,
  type GroupVersionKindResource,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttributesClass,
} from "../../api/index.ts";
import { CsikitError } from "../../base/index.ts";
import { firstServedVersion } from "../../kube/index.ts";
import { E2eCheckError, E2eSkip } from "../model.ts";
import { TestNamespace } from "../resources.ts";
import type { SuiteImplementation, TestContext } from "../suite.ts";

/** The versions a cluster may serve VolumeAttributesClass at, preferred first (GA v1 at 1.34). */
const VAC_VERSIONS: readonly GroupVersionKindResource[] = ["v1", "v1beta1"].map((version) =>
  Object.freeze({ ...GVR.volumeAttributesClasses, version }),
);

/** The finalizer that keeps a class in use (kube-controller-manager's vac-protection loop). */
const VAC_PROTECTION = "kubernetes.io/vac-protection";

/** The claim moves to this class in the recovery test: a key no driver knows. */
const INVALID_PARAMETERS = { xxInvalidParameterKey: "xxInvalidParameterValue" };

async function vacApi(context: TestContext): Promise<GroupVersionKindResource> {
  const served = await firstServedVersion(context.client, VAC_VERSIONS, context.signal);
  if (served === undefined)
    throw new E2eSkip("VolumeAttributesClass is not served (neither storage.k8s.io/v1 nor v1beta1)");
  return served;
}

/** The driver's class (driver and parameters) from its VolumeAttributesClass source. */
async function driverVac(
  context: TestContext,
  api: GroupVersionKindResource,
): Promise<{ driverName: string; parameters: Record<string, string> }> {
  const { driver, client } = context;
  const source = driver.VolumeAttributesClass;
  if (source.FromName) return { driverName: driver.DriverInfo.Name, parameters: {} };
  if (source.FromExistingClassName !== "") {
    const existing = await client.get<VolumeAttributesClass>(api, source.FromExistingClassName);
    return { driverName: existing.driverName, parameters: { ...existing.parameters } };
  }
  if (source.FromFile !== "") {
    const manifest = parseYaml(await readFile(source.FromFile, "utf8")) as VolumeAttributesClass | null;
    if (manifest?.kind !== "VolumeAttributesClass")
      throw new CsikitError(
        "CSIKIT_ERR_E2E_DRIVER",
        `VolumeAttributesClass.FromFile ${source.FromFile}: not a VolumeAttributesClass manifest (kind ${JSON.stringify(manifest?.kind)})`,
      );
    return {
      driverName: manifest.driverName || driver.DriverInfo.Name,
      parameters: { ...manifest.parameters },
    };
  }
  throw new E2eSkip(`Driver "${driver.DriverInfo.Name}" has no configured VolumeAttributesClass - skipping`);
}

interface Modify {
  context: TestContext;
  api: GroupVersionKindResource;
  namespace: TestNamespace;
  /** The claim under test. */
  claim: string;
  /** The class made first (the claim's own when it was made with one). */
  vac: string;
}

async function createVac(
  context: TestContext,
  api: GroupVersionKindResource,
  parameters?: Record<string, string>,
): Promise<string> {
  const base = await driverVac(context, api);
  const created = await context.namespace.createObject<VolumeAttributesClass>(api, {
    apiVersion: `${api.group}/${api.version}`,
    kind: "VolumeAttributesClass",
    metadata: { name: context.namespace.clusterName("vac") },
    driverName: base.driverName,
    ...(Object.keys(parameters ?? base.parameters).length > 0
      ? { parameters: parameters ?? base.parameters }
      : {}),
  });
  return created.metadata?.name ?? "";
}

/** Upstream's init: a class, a volume (made with the class or not) and a pod using it. */
async function init(context: TestContext, withVac: boolean): Promise<Modify> {
  const { namespace } = context;
  const api = await vacApi(context);
  const vac = await createVac(context, api);
  const volume = await namespace.createVolume(withVac ? { claim: { volumeAttributesClassName: vac } } : {});
  const claim = volume.claimName ?? "";
  await namespace.runPod({ volumes: [TestNamespace.claimVolume(claim, { block: volume.block })] });
  return { context, api, namespace, claim, vac };
}

async function setVac(m: Modify, name: string): Promise<void> {
  await m.namespace.client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    m.claim,
    { spec: { volumeAttributesClassName: name } },
    { namespace: m.namespace.name },
  );
}

/** The claim's current class is the one asked, nothing is in progress, and its PV has the class. */
async function waitModified(m: Modify, name: string): Promise<void> {
  const { namespace } = m;
  const claim = await namespace.waitFor(
    `claim ${namespace.name}/${m.claim} to have VolumeAttributesClass ${name}`,
    "ClaimProvision",
    async () => {
      const c = await namespace.getClaim(m.claim);
      return c.status?.currentVolumeAttributesClassName === name && c.status.modifyVolumeStatus === undefined
        ? c
        : undefined;
    },
  );
  const pv = await namespace.client.get<PersistentVolume>(
    GVR.persistentVolumes,
    claim.spec?.volumeName ?? "",
  );
  if (pv.spec?.volumeAttributesClassName !== name)
    throw new E2eCheckError(
      `PV ${pv.metadata?.name} has VolumeAttributesClass ${JSON.stringify(pv.spec?.volumeAttributesClassName)}, want ${name}`,
    );
}

/** The move to the class failed: Infeasible status, or a ModifyVolumeError condition. */
async function waitModifyFailed(m: Modify, name: string): Promise<void> {
  const { namespace } = m;
  await namespace.waitFor(
    `claim ${namespace.name}/${m.claim} to fail moving to ${name}`,
    "ClaimProvision",
    async () => {
      const c = await namespace.getClaim(m.claim);
      return (
        c.status?.modifyVolumeStatus?.status === "Infeasible" ||
        (c.status?.conditions ?? []).some((condition) => condition.type === "ModifyVolumeError")
      );
    },
  );
}

export const volumeModifyTests: SuiteImplementation = {
  suite: "volume-modify",
  tests: {
    "should create a volume with VAC": async (context) => {
      const m = await init(context, true);
      await waitModified(m, m.vac);
    },
    "should modify volume with no VAC": async (context) => {
      const m = await init(context, false);
      await setVac(m, m.vac);
      await waitModified(m, m.vac);
    },
    "should modify volume that already has a VAC": async (context) => {
      const m = await init(context, true);
      const next = await createVac(context, m.api);
      await setVac(m, next);
      await waitModified(m, next);
    },
    "should recover from invalid target VAC by updating PVC to new valid VAC": async (context) => {
      const m = await init(context, false);
      const invalid = await createVac(context, m.api, INVALID_PARAMETERS);
      await setVac(m, invalid);
      await waitModifyFailed(m, invalid);
      await setVac(m, m.vac);
      await waitModified(m, m.vac);
    },
    "should be protected by vac-protection finalizer": async (context) => {
      const m = await init(context, true);
      await waitModified(m, m.vac);
      const { namespace, client } = context;
      const get = (): Promise<VolumeAttributesClass> => client.get<VolumeAttributesClass>(m.api, m.vac);
      await namespace.waitFor(
        `VolumeAttributesClass ${m.vac} to carry ${VAC_PROTECTION}`,
        "ClaimProvision",
        async () => ((await get()).metadata?.finalizers ?? []).includes(VAC_PROTECTION),
      );
      await client.delete(m.api, m.vac);
      const held = await get();
      if (held.metadata?.deletionTimestamp === undefined)
        throw new E2eCheckError(`VolumeAttributesClass ${m.vac} was not marked for deletion`);
      if (!(held.metadata.finalizers ?? []).includes(VAC_PROTECTION))
        throw new E2eCheckError(
          `VolumeAttributesClass ${m.vac} in use by claim ${m.claim} lost ${VAC_PROTECTION}`,
        );
      // The class goes once nothing names it: the pod, the claim, then its volume.
      const pv = (await namespace.getClaim(m.claim)).spec?.volumeName ?? "";
      for (const pod of (await client.list<Pod>(GVR.pods, { namespace: namespace.name })).items)
        await namespace.deletePod(pod.metadata?.name ?? "");
      await namespace.deleteAndWait(GVR.persistentVolumeClaims, m.claim, namespace.name);
      if (pv !== "") await namespace.waitGone(GVR.persistentVolumes, pv);
      await namespace.waitGone(m.api, m.vac);
    },
  },
};
