// Upstream's ephemeral suite (test/e2e/storage/testsuites/ephemeral.go): pods with inline
// volumes — generic ephemeral (a claim per pod, owned by it) or CSI inline — start, see their
// volume mounted read-only or read/write (a device for Block), get a volume of their own when two
// pods share one definition, take several such volumes, and a generic ephemeral volume's claim
// can be expanded online. Once the pod is gone no claim is left in the namespace.

import {
  GVR,
  ephemeralClaimName,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../api/index.ts";
import { isNotFound } from "../../kube/index.ts";
import { bytesOf, E2eCheckError, E2eSkip } from "../model.ts";
import { mountPath, type PodVolume, type TestNamespace } from "../resources.ts";
import type { SuiteImplementation, TestContext } from "../suite.ts";

interface EphemeralCase {
  readOnly?: boolean;
  /** Inline volumes in the pod (default 1). */
  count?: number;
  /** Checks made while the pod runs. */
  whileRunning?: (pod: Pod, volumes: readonly PodVolume[]) => Promise<void>;
}

/** The pod's volumes: the pattern's generic ephemeral source, or the driver's inline volumes. */
async function inlineVolumes(context: TestContext, count: number, readOnly: boolean): Promise<PodVolume[]> {
  const { namespace, driver, pattern } = context;
  const volumes: PodVolume[] = [];
  if (pattern.volType === "CSIInlineVolume") {
    if (driver.InlineVolumes.length === 0)
      throw new E2eSkip(`${driver.DriverInfo.Name} does not have any InlineVolumeAttributes defined`);
    for (let i = 0; i < count; i++) {
      const inline = driver.InlineVolumes[i % driver.InlineVolumes.length]!;
      if (inline.ReadOnly && !readOnly)
        throw new E2eSkip(
          `inline ephemeral volume #${i} is read-only, but the test needs a read/write volume`,
        );
      volumes.push({
        source: { csi: { driver: driver.DriverInfo.Name, volumeAttributes: { ...inline.Attributes } } },
        ...(readOnly ? { readOnly: true } : {}),
      });
    }
    return volumes;
  }
  const volume = await namespace.createVolume();
  for (let i = 0; i < count; i++)
    volumes.push({
      source: volume.source,
      block: volume.block,
      ...(readOnly && !volume.block ? { readOnly: true } : {}),
    });
  return volumes;
}

/** The claims a pod's generic ephemeral volumes got. */
const ephemeralClaims = (pod: Pod): string[] =>
  (pod.spec?.volumes ?? [])
    .filter((volume) => volume.ephemeral)
    .map((volume) => ephemeralClaimName(pod, volume));

/** Deletes the pod and waits until its generic ephemeral claims and their volumes are gone too. */
async function stopPodAndDependents(namespace: TestNamespace, podName: string): Promise<void> {
  let pod: Pod;
  try {
    pod = await namespace.getPod(podName);
  } catch (error) {
    if (isNotFound(error)) return;
    throw error;
  }
  const claims = ephemeralClaims(pod);
  const volumes: string[] = [];
  for (const claim of claims) {
    try {
      const name = (await namespace.getClaim(claim)).spec?.volumeName;
      if (name) volumes.push(name);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  await namespace.deletePod(podName);
  for (const claim of claims) await namespace.waitGone(GVR.persistentVolumeClaims, claim, namespace.name);
  for (const volume of volumes) {
    try {
      const pv = await namespace.client.get<PersistentVolume>(GVR.persistentVolumes, volume);
      if (pv.spec?.persistentVolumeReclaimPolicy === "Delete")
        await namespace.waitGone(GVR.persistentVolumes, volume);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}

/** Upstream's EphemeralTest.TestEphemeral: a pod with the inline volume(s), its checks, no dangling claims after. */
async function testEphemeral(context: TestContext, options: EphemeralCase = {}): Promise<void> {
  const { namespace } = context;
  const volumes = await inlineVolumes(context, options.count ?? 1, options.readOnly ?? false);
  const podName = await namespace.runPod({ volumes });
  try {
    await options.whileRunning?.(await namespace.getPod(podName), volumes);
  } finally {
    await stopPodAndDependents(namespace, podName);
  }
  const left = await namespace.client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    namespace: namespace.name,
  });
  if (left.items.length > 0)
    throw new E2eCheckError(
      `dangling claims after the pod is gone: ${left.items.map((claim) => claim.metadata?.name).join(", ")}`,
    );
}

/** A check that the first volume is mounted with the given access (the last mount on its path wins). */
const mountedAs = (access: "ro" | "rw"): string => {
  const path = mountPath(0);
  return `grep ' ${path} ' /proc/self/mountinfo | tail -n 1 | grep -q ' ${path} ${access}[, ]'`;
};

async function expandEphemeralClaim(context: TestContext, pod: Pod): Promise<void> {
  const { namespace, driver } = context;
  const claimName = ephemeralClaims(pod)[0] ?? "";
  const claim = await namespace.getClaim(claimName);
  const current = claim.spec?.resources?.requests?.storage ?? "0";
  // Upstream grows it by 1Gi; 1Mi proves the same and keeps the volume small.
  const want = bytesOf(current) + 1024n * 1024n;
  const updated = await namespace.client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    claimName,
    { spec: { resources: { requests: { storage: String(want) } } } },
    { namespace: namespace.name },
  );
  const asked = updated.spec?.resources?.requests?.storage ?? "0";
  if (bytesOf(asked) !== want)
    throw new E2eCheckError(
      `error updating pvc ${claimName} from ${current} to ${want} bytes (now ${asked})`,
    );
  const volumeName = updated.spec?.volumeName ?? "";
  await namespace.waitFor(
    `PV ${volumeName} to reach ${want} bytes (controller resize)`,
    "PodStart",
    async () => {
      const pv = await namespace.client.get<PersistentVolume>(GVR.persistentVolumes, volumeName);
      return bytesOf(pv.spec?.capacity?.storage ?? "0") >= want;
    },
  );
  const resized = await namespace.waitFor(
    `claim ${claimName} to report ${want} bytes (file system resize)`,
    "PodStart",
    async () => {
      const c = await namespace.getClaim(claimName);
      return bytesOf(c.status?.capacity?.storage ?? "0") >= want ? c : undefined;
    },
  );
  const resizing = (resized.status?.conditions ?? []).filter((condition) => /Resiz/.test(condition.type));
  if (resizing.length > 0)
    throw new E2eCheckError(
      `claim ${claimName} still has resize conditions ${resizing.map((c) => c.type).join(", ")} (driver ${driver.DriverInfo.Name})`,
    );
}

export const ephemeralTests: SuiteImplementation = {
  suite: "ephemeral",
  tests: {
    "should create read-only inline ephemeral volume": (context) =>
      testEphemeral(context, {
        readOnly: true,
        whileRunning: async (pod) => {
          await context.namespace.execOk(pod.metadata?.name ?? "", mountedAs("ro"));
        },
      }),
    "should create read/write inline ephemeral volume": (context) =>
      testEphemeral(context, {
        whileRunning: async (pod, volumes) => {
          const path = mountPath(0);
          const script = volumes[0]?.block
            ? `if ! [ -b ${path} ]; then echo ${path} is not a block device; exit 1; fi`
            : mountedAs("rw");
          await context.namespace.execOk(pod.metadata?.name ?? "", script);
        },
      }),
    "should support expansion of pvcs created for ephemeral pvcs": (context) => {
      if (context.driver.DriverInfo.Capabilities.onlineExpansion !== true)
        throw new E2eSkip(
          `Driver "${context.driver.DriverInfo.Name}" does not support online volume expansion - skipping`,
        );
      return testEphemeral(context, { whileRunning: (pod) => expandEphemeralClaim(context, pod) });
    },
    "should support two pods which have the same volume definition": (context) => {
      const { namespace, pattern, driver } = context;
      const inline = pattern.volType === "CSIInlineVolume" ? driver.InlineVolumes[0] : undefined;
      const shared = inline?.Shared ?? false;
      const readOnly = inline?.ReadOnly ?? false;
      return testEphemeral(context, {
        readOnly,
        whileRunning: async (pod, volumes) => {
          const second = await namespace.runPod({ volumes: [volumes[0]!] });
          try {
            if (volumes[0]?.block !== true && !readOnly && !shared) {
              // Each pod has a volume of its own: a file written in one is not in the other.
              const file = `${mountPath(0)}/hello-world`;
              await namespace.execOk(pod.metadata?.name ?? "", `touch ${file}`);
              await namespace.execOk(second, `[ ! -f ${file} ]`);
            }
          } finally {
            await stopPodAndDependents(namespace, second);
          }
        },
      });
    },
    "should support multiple inline ephemeral volumes": (context) => testEphemeral(context, { count: 2 }),
  },
};
