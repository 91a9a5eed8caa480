// Data checks shared by the suites, made through the pods (pods/exec), never through the host or
// the driver's storage: content written into a volume — a file on a file system, the first bytes
// of a block device — by one pod is read back by another, started after the first is gone (so the
// volume was unpublished and published again), as upstream's PVWriteReadSingleNodeCheck does.

import { randomBytes } from "node:crypto";
import type { PersistentVolume } from "../../api/index.ts";
import type { DriverDefinition } from "../catalogue/index.ts";
import { bytesOf, E2eCheckError } from "../model.ts";
import { mountPath, type PodVolume, type TestNamespace, type VolumeResource } from "../resources.ts";

/** Where a check's data lives in a volume: a file on a mounted volume, the device itself for Block. */
export interface DataLocation {
  block: boolean;
  /** The mount path or device path in the pod. */
  path: string;
}

export const locationOf = (volume: { block: boolean }, index = 0): DataLocation => ({
  block: volume.block,
  path: mountPath(index),
});

/** Random text for a check: one line, recognisable. */
export function randomContent(label = "csikit e2e"): string {
  return `${label} ${randomBytes(16).toString("hex")}\n`;
}

/** Writes `content` (at the start of the device, or into <path>/data) and syncs it. */
export async function writeData(
  namespace: TestNamespace,
  pod: string,
  where: DataLocation,
  content: string,
  file = "data",
): Promise<void> {
  const script = where.block
    ? `dd of=${where.path} bs=${content.length} count=1 conv=fsync 2>/dev/null`
    : `cat > ${where.path}/${file} && sync`;
  await namespace.execOk(pod, script, content);
}

/** Reads back `length` bytes (block) or the whole file. */
export async function readData(
  namespace: TestNamespace,
  pod: string,
  where: DataLocation,
  length: number,
  file = "data",
): Promise<string> {
  const script = where.block ? `head -c ${length} ${where.path}` : `cat ${where.path}/${file}`;
  return namespace.execOk(pod, script);
}

/** Fails unless the pod reads back exactly `content`. */
export async function expectData(
  namespace: TestNamespace,
  pod: string,
  where: DataLocation,
  content: string,
  file = "data",
): Promise<void> {
  const back = await readData(namespace, pod, where, content.length, file);
  if (back !== content)
    throw new E2eCheckError(
      `pod ${pod} read ${JSON.stringify(back)} from ${where.path}${where.block ? "" : `/${file}`}, want ${JSON.stringify(content)}`,
    );
}

/** A pod's volume for a VolumeResource, mapped as a device when it is Block. */
export const podVolume = (
  volume: VolumeResource,
  options: Omit<PodVolume, "source" | "block"> = {},
): PodVolume => ({
  source: volume.source,
  block: volume.block,
  ...options,
});

/**
 * Writes random data in one pod, deletes it, reads it back in a second pod on the same node
 * (upstream's PVWriteReadSingleNodeCheck). Returns the node the pods ran on.
 */
export async function writeReadCheck(namespace: TestNamespace, volume: VolumeResource): Promise<string> {
  const content = randomContent();
  const where = locationOf(volume);
  const writer = await namespace.runPod({ volumes: [podVolume(volume)] });
  const node = (await namespace.getPod(writer)).spec?.nodeName ?? "";
  await writeData(namespace, writer, where, content);
  await namespace.deletePod(writer);
  const reader = await namespace.runPod({ volumes: [podVolume(volume)], node });
  await expectData(namespace, reader, where, content);
  await namespace.deletePod(reader);
  return node;
}

/** The provisioned PV is the driver's, of the class, at least the size asked for (upstream's checkProvisioning). */
export function checkProvisionedVolume(
  volume: PersistentVolume,
  driver: DriverDefinition,
  className: string,
  size: string,
): void {
  const name = volume.metadata?.name ?? "";
  if (volume.spec?.csi?.driver !== driver.DriverInfo.Name)
    throw new E2eCheckError(
      `PV ${name} is of driver ${JSON.stringify(volume.spec?.csi?.driver)}, want ${driver.DriverInfo.Name}`,
    );
  if (volume.spec?.storageClassName !== className)
    throw new E2eCheckError(
      `PV ${name} has class ${JSON.stringify(volume.spec?.storageClassName)}, want ${className}`,
    );
  const capacity = volume.spec?.capacity?.storage;
  if (capacity === undefined) throw new E2eCheckError(`PV ${name} has no capacity`);
  if (bytesOf(capacity) < bytesOf(size))
    throw new E2eCheckError(`PV ${name} has capacity ${capacity}, less than the claim's ${size}`);
}
