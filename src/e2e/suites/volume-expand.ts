// Upstream's volume-expand suite (test/e2e/storage/testsuites/volume_expand.go): a claim of a
// class without allowVolumeExpansion cannot be grown (the API server forbids the edit); a claim of
// an expandable class grows by 1Gi while no pod uses it (offline: the controller grows the volume,
// the claim waits for its node side with FileSystemResizePending, the next pod finishes it), while
// a pod uses it (online), and when the pod is re-created on the same node after the controller
// finished. Each ends with the claim's status.capacity at the new size, no resize condition left,
// no resize status and allocatedResources at least the request — and, seen from a pod, a block
// device that reads to its new end, a file system at least as large as the new size allows.

import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type PersistentVolumeClaimCondition,
  type StorageClass,
} from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import { apiStatusCode } from "../../kube/index.ts";
import { bytesOf, E2eCheckError } from "../model.ts";
import { MOUNT_PATH, type TestNamespace, type VolumeResource } from "../resources.ts";
import type { SuiteImplementation, TestContext } from "../suite.ts";
import { podVolume } from "./checks.ts";

/** How much each test grows its claim. */
const EXPAND_BYTES = 1n << 30n;
const MIB = 1n << 20n;
/** Upstream's bound of the edit retries. */
const EDIT_MS = 30_000;
const RESIZE_CONDITIONS = new Set([
  "FileSystemResizePending",
  "Resizing",
  "ControllerResizeError",
  "NodeResizeError",
]);

const storageOf = (list: Record<string, string> | undefined): bigint | undefined =>
  list?.storage !== undefined ? bytesOf(list.storage) : undefined;

/** The claim's allocated capacity (status.capacity), which the new size is counted from. */
async function capacityOf(namespace: TestNamespace, claim: string): Promise<bigint> {
  const current = storageOf((await namespace.getClaim(claim)).status?.capacity);
  if (current === undefined) throw new E2eCheckError(`claim ${claim} has no status.capacity`);
  return current;
}

/** Sets the claim's storage request to `bytes` (a PUT of the fetched claim, as `kubectl edit`). */
async function setRequest(
  namespace: TestNamespace,
  claim: string,
  bytes: bigint,
): Promise<PersistentVolumeClaim> {
  const object = await namespace.getClaim(claim);
  object.spec = {
    ...object.spec,
    resources: {
      ...object.spec?.resources,
      requests: { ...object.spec?.resources?.requests, storage: String(bytes) },
    },
  };
  return namespace.client.update<PersistentVolumeClaim>(GVR.persistentVolumeClaims, object);
}

/** Grows the claim, retrying a failed edit (a conflict with a controller) for a bounded time. */
async function expandClaim(namespace: TestNamespace, claim: string, bytes: bigint): Promise<void> {
  let last = "";
  const updated = await namespace
    .waitFor(`claim ${claim}'s request to be set to ${bytes} bytes`, EDIT_MS, async () => {
      try {
        return await setRequest(namespace, claim, bytes);
      } catch (error) {
        last = errorMessage(error);
        return undefined;
      }
    })
    .catch((error: unknown) => {
      throw new E2eCheckError(`${errorMessage(error)}; last edit error: ${last}`);
    });
  const asked = storageOf(updated.spec?.resources?.requests);
  if (asked !== bytes)
    throw new E2eCheckError(`claim ${claim} asks for ${asked} bytes after the edit, want ${bytes}`);
}

/** Upstream's WaitForControllerVolumeResize: the PV's capacity reaches the claim's request. */
async function waitControllerResize(namespace: TestNamespace, claim: string, bytes: bigint): Promise<void> {
  const volumeName = (await namespace.getClaim(claim)).spec?.volumeName ?? "";
  await namespace.waitFor(`PV ${volumeName} to be resized to ${bytes} bytes`, "ClaimProvision", async () => {
    const volume = await namespace.client.get<PersistentVolume>(GVR.persistentVolumes, volumeName);
    return (storageOf(volume.spec?.capacity) ?? 0n) >= bytes;
  });
}

const conditionTypes = (claim: PersistentVolumeClaim): string[] =>
  (claim.status?.conditions ?? []).map((condition: PersistentVolumeClaimCondition) => condition.type);

/**
 * Upstream's WaitForPendingFSResizeCondition: the claim waits for its node side
 * (FileSystemResizePending), or has no resize condition at all (no node expansion needed).
 */
async function waitNodeResizePending(
  namespace: TestNamespace,
  claim: string,
): Promise<PersistentVolumeClaim> {
  return namespace.waitFor(
    `claim ${claim} to wait for its file system resize`,
    "ClaimProvision",
    async () => {
      const object = await namespace.getClaim(claim);
      const types = conditionTypes(object);
      return types.includes("FileSystemResizePending") || !types.some((type) => RESIZE_CONDITIONS.has(type))
        ? object
        : undefined;
    },
  );
}

/** Upstream's WaitForFSResize: status.capacity reaches the request. */
async function waitFsResize(namespace: TestNamespace, claim: string): Promise<PersistentVolumeClaim> {
  return namespace.waitFor(`claim ${claim}'s file system resize to finish`, "ClaimProvision", async () => {
    const object = await namespace.getClaim(claim);
    const asked = storageOf(object.spec?.resources?.requests) ?? 0n;
    return (storageOf(object.status?.capacity) ?? 0n) >= asked ? object : undefined;
  });
}

/** Offline expansion, before the next pod: the controller side done, the node side pending. */
function checkAllocatedOffline(claim: PersistentVolumeClaim, bytes: bigint): void {
  const name = claim.metadata?.name ?? "";
  const status = claim.status?.allocatedResourceStatuses?.storage ?? "";
  if (status !== "" && status !== "NodeResizePending")
    throw new E2eCheckError(`claim ${name} has resize status ${status}, want NodeResizePending or none`);
  const allocated = storageOf(claim.status?.allocatedResources) ?? 0n;
  if (allocated < bytes)
    throw new E2eCheckError(`claim ${name} has ${allocated} bytes allocated, want at least ${bytes}`);
}

/** The end state: no resize condition or status left, allocatedResources covering the request. */
function checkResized(claim: PersistentVolumeClaim): void {
  const name = claim.metadata?.name ?? "";
  const left = conditionTypes(claim).filter((type) => RESIZE_CONDITIONS.has(type));
  if (left.length > 0)
    throw new E2eCheckError(`claim ${name} still has resize condition(s) ${left.join(", ")}`);
  const status = claim.status?.allocatedResourceStatuses?.storage;
  if (status !== undefined && status !== "")
    throw new E2eCheckError(`claim ${name} has resize status ${status}, want none`);
  const asked = storageOf(claim.spec?.resources?.requests) ?? 0n;
  const allocated = storageOf(claim.status?.allocatedResources) ?? 0n;
  if (allocated < asked)
    throw new E2eCheckError(`claim ${name} has ${allocated} bytes allocated, less than its request ${asked}`);
}

/** The size the pod sees: a file system's total (df -k), in bytes. */
async function fsBytes(namespace: TestNamespace, pod: string): Promise<bigint> {
  const out = await namespace.execOk(pod, `df -k ${MOUNT_PATH} | tail -n 1`);
  // The last line's second field is the total in KiB (a long device name may wrap the line
  // before it; tail keeps the numbers).
  const fields = out.trim().split(/\s+/);
  const numbers = fields.filter((field) => /^\d+$/.test(field));
  if (numbers.length === 0)
    throw new E2eCheckError(`df -k ${MOUNT_PATH} in pod ${pod} printed ${JSON.stringify(out)}`);
  return BigInt(numbers[0]!) * 1024n;
}

/**
 * Checks the new size through the pod: a block device reads a full MiB ending at the new size;
 * a file system (`df`) is at least `before` grown by nine tenths of the expansion (a file
 * system's own overhead takes part of it), unless it was already as large as the new size — a
 * volume that is a directory of a larger file system has no size of its own to see.
 */
async function checkSizeInPod(
  namespace: TestNamespace,
  pod: string,
  volume: VolumeResource,
  bytes: bigint,
  fsBefore?: bigint,
): Promise<void> {
  if (volume.block) {
    const skip = bytes / MIB - 1n;
    const out = await namespace.execOk(
      pod,
      `dd if=${MOUNT_PATH} bs=1048576 skip=${skip} count=1 2>/dev/null | wc -c`,
    );
    if (BigInt(out.trim() || "0") !== MIB)
      throw new E2eCheckError(
        `pod ${pod} read ${out.trim()} bytes of the MiB before ${bytes} on device ${MOUNT_PATH}, want ${MIB}: the device did not grow`,
      );
    return;
  }
  if (fsBefore === undefined || fsBefore >= bytes) return;
  const after = await fsBytes(namespace, pod);
  const want = fsBefore + (EXPAND_BYTES * 9n) / 10n;
  if (after < want)
    throw new E2eCheckError(
      `the file system at ${MOUNT_PATH} in pod ${pod} is ${after} bytes after the expansion (${fsBefore} before), want at least ${want}`,
    );
}

/** The pattern's volume and its claim (bound once its first pod runs, whatever the binding mode). */
async function claimedVolume(namespace: TestNamespace): Promise<{ volume: VolumeResource; claim: string }> {
  const volume = await namespace.createVolume();
  return { volume, claim: volume.claimName ?? "" };
}

async function fsBytesOf(
  namespace: TestNamespace,
  pod: string,
  volume: VolumeResource,
): Promise<bigint | undefined> {
  return volume.block ? undefined : fsBytes(namespace, pod);
}

export const volumeExpandTests: SuiteImplementation = {
  suite: "volume-expand",
  tests: {
    "should not allow expansion of pvcs without AllowVolumeExpansion property": async ({ namespace }) => {
      const volume = await namespace.createVolume();
      const claim = volume.claimName ?? "";
      await namespace.runPod({ volumes: [podVolume(volume)] });
      const storageClass = await namespace.client.get<StorageClass>(
        GVR.storageClasses,
        volume.className ?? "",
      );
      if (storageClass.allowVolumeExpansion !== false)
        throw new E2eCheckError(
          `class ${volume.className} has allowVolumeExpansion ${JSON.stringify(storageClass.allowVolumeExpansion)}, want false`,
        );
      const bytes = (await capacityOf(namespace, claim)) + EXPAND_BYTES;
      // Retried on other errors (a conflict), bounded; an accepted edit ends the wait at once.
      let last = "";
      const outcome = await namespace
        .waitFor(`the API server to refuse growing claim ${claim}`, EDIT_MS, async () => {
          try {
            await setRequest(namespace, claim, bytes);
            return "accepted" as const;
          } catch (error) {
            last = errorMessage(error);
            return apiStatusCode(error) === 403 ? ("forbidden" as const) : undefined;
          }
        })
        .catch((error: unknown) => {
          throw new E2eCheckError(`growing claim ${claim} was not forbidden: ${last || errorMessage(error)}`);
        });
      if (outcome === "accepted")
        throw new E2eCheckError(
          `claim ${claim} of a class without allowVolumeExpansion was grown to ${bytes} bytes`,
        );
    },

    "Verify if offline PVC expansion works": async ({ namespace }) => {
      const { volume, claim } = await claimedVolume(namespace);
      const first = await namespace.runPod({ volumes: [podVolume(volume)] });
      const node = (await namespace.getPod(first)).spec?.nodeName ?? "";
      const fsBefore = await fsBytesOf(namespace, first, volume);
      await namespace.deletePod(first);
      const bytes = (await capacityOf(namespace, claim)) + EXPAND_BYTES;
      await expandClaim(namespace, claim, bytes);
      await waitControllerResize(namespace, claim, bytes);
      checkAllocatedOffline(await waitNodeResizePending(namespace, claim), bytes);
      const second = await namespace.runPod({ volumes: [podVolume(volume)], node });
      const resized = await waitFsResize(namespace, claim);
      checkResized(resized);
      await checkSizeInPod(namespace, second, volume, bytes, fsBefore);
    },

    "should resize volume when PVC is edited while pod is using it": async ({ namespace }) => {
      const { volume, claim } = await claimedVolume(namespace);
      const pod = await namespace.runPod({ volumes: [podVolume(volume)] });
      const fsBefore = await fsBytesOf(namespace, pod, volume);
      const bytes = (await capacityOf(namespace, claim)) + EXPAND_BYTES;
      await expandClaim(namespace, claim, bytes);
      await waitControllerResize(namespace, claim, bytes);
      checkResized(await waitFsResize(namespace, claim));
      await checkSizeInPod(namespace, pod, volume, bytes, fsBefore);
    },

    "should resize volume when PVC is edited and the pod is re-created on the same node after controller resize is finished":
      async ({ namespace }: TestContext) => {
        const { volume, claim } = await claimedVolume(namespace);
        const first = await namespace.runPod({ volumes: [podVolume(volume)] });
        const node = (await namespace.getPod(first)).spec?.nodeName ?? "";
        const fsBefore = await fsBytesOf(namespace, first, volume);
        const bytes = (await capacityOf(namespace, claim)) + EXPAND_BYTES;
        await expandClaim(namespace, claim, bytes);
        await waitControllerResize(namespace, claim, bytes);
        await namespace.deletePod(first);
        const second = await namespace.runPod({ volumes: [podVolume(volume)], node });
        checkResized(await waitFsResize(namespace, claim));
        await checkSizeInPod(namespace, second, volume, bytes, fsBefore);
      },
  },
};
