// Data checks shared by the suites, made through the pods (pods/exec), never through the host or
// the driver's storage: what one pod writes into the volume, a second pod — started after the
// first is gone, so the volume was unpublished and published again — reads back unchanged.

import { randomBytes } from "node:crypto";
import type { PersistentVolume } from "../../api/index.ts";
import { parseQuantity, quantityValue } from "../../api/index.ts";
import { E2eCheckError, MOUNT_PATH, type TestNamespace } from "../resources.ts";
import type { E2eDriver } from "../model.ts";

/** Writes random data in one pod, deletes it, reads it back in a second pod (upstream's PVWriteReadSingleNodeCheck). */
export async function writeReadCheck(namespace: TestNamespace, claim: string): Promise<void> {
  const content = `csikit e2e ${randomBytes(16).toString("hex")}\n`;
  const file = `${MOUNT_PATH}/data`;
  const writer = await namespace.createPod(claim);
  const writerName = writer.metadata?.name ?? "";
  await namespace.waitRunning(writerName);
  await namespace.execOk(writerName, `cat > ${file} && sync`, content);
  await namespace.deletePod(writerName);
  const reader = await namespace.createPod(claim);
  const readerName = reader.metadata?.name ?? "";
  await namespace.waitRunning(readerName);
  const back = await namespace.execOk(readerName, `cat ${file}`);
  if (back !== content)
    throw new E2eCheckError(
      `pod ${readerName} read ${JSON.stringify(back)} from ${file}, pod ${writerName} wrote ${JSON.stringify(content)}`,
    );
  await namespace.deletePod(readerName);
}

/** The provisioned PV is the driver's, of the class, at least the size asked for (upstream's checkProvisioning). */
export function checkProvisionedVolume(volume: PersistentVolume, driver: E2eDriver, className: string): void {
  const name = volume.metadata?.name ?? "";
  if (volume.spec?.csi?.driver !== driver.name)
    throw new E2eCheckError(
      `PV ${name} is of driver ${JSON.stringify(volume.spec?.csi?.driver)}, want ${driver.name}`,
    );
  if (volume.spec?.storageClassName !== className)
    throw new E2eCheckError(
      `PV ${name} has class ${JSON.stringify(volume.spec?.storageClassName)}, want ${className}`,
    );
  const capacity = volume.spec?.capacity?.storage;
  if (capacity === undefined) throw new E2eCheckError(`PV ${name} has no capacity`);
  if (quantityValue(parseQuantity(capacity)) < quantityValue(parseQuantity(driver.claimSize)))
    throw new E2eCheckError(`PV ${name} has capacity ${capacity}, less than the claim's ${driver.claimSize}`);
  if (!(volume.spec?.accessModes ?? []).includes("ReadWriteOnce"))
    throw new E2eCheckError(
      `PV ${name} has access modes ${JSON.stringify(volume.spec?.accessModes)}, want ReadWriteOnce`,
    );
}
