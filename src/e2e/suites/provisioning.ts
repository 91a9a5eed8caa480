// Upstream's provisioning suite (test/e2e/storage/testsuites/provisioning.go): a dynamically
// provisioned volume is the driver's, of the test's class, at least the size asked, carries the
// class's mount options, and holds data through pods.

import type { SuiteImplementation, TestContext } from "../suite.ts";
import { E2eCheckError } from "../model.ts";
import {
  checkProvisionedVolume,
  podVolume,
  randomContent,
  writeData,
  expectData,
  locationOf,
} from "./checks.ts";

/** Provisions with the class options, checks the PV, writes and reads data (one pod binds a delayed claim). */
async function provisionAndCheck(context: TestContext, mountOptions: readonly string[]): Promise<void> {
  const { namespace, driver } = context;
  const volume = await namespace.createVolume({ class: { mountOptions } });
  const content = randomContent();
  const writer = await namespace.runPod({ volumes: [podVolume(volume)] });
  const node = (await namespace.getPod(writer)).spec?.nodeName ?? "";
  await writeData(namespace, writer, locationOf(volume), content);
  const pv = await namespace.waitBound(volume.claimName ?? "");
  checkProvisionedVolume(pv, driver, volume.className ?? "", namespace.claimSize);
  const onVolume = pv.spec?.mountOptions ?? [];
  const missing = mountOptions.filter((option) => !onVolume.includes(option));
  if (missing.length > 0)
    throw new E2eCheckError(
      `PV ${pv.metadata?.name} lacks the class's mount options ${missing.join(",")} (has ${onVolume.join(",") || "none"})`,
    );
  await namespace.deletePod(writer);
  const reader = await namespace.runPod({ volumes: [podVolume(volume)], node });
  await expectData(namespace, reader, locationOf(volume), content);
}

export const provisioningTests: SuiteImplementation = {
  suite: "provisioning",
  tests: {
    "should provision storage with mount options": (context) =>
      provisionAndCheck(context, [
        ...(context.driver.DriverInfo.SupportedMountOption ?? []),
        ...(context.driver.DriverInfo.RequiredMountOption ?? []),
      ]),
  },
};
