// Upstream's provisioning suite (test/e2e/storage/testsuites/provisioning.go), the cases on a
// dynamically provisioned filesystem volume: provisioning from the driver's class with its
// defaults, and with the driver's supported mount options on the class (which must reach the
// PV). Each then proves the volume holds data through pods.

import { DYNAMIC_PV_DEFAULT_FS } from "../model.ts";
import type { Suite, TestContext } from "../suite.ts";
import { E2eCheckError } from "../resources.ts";
import { checkProvisionedVolume, writeReadCheck } from "./checks.ts";

async function provision(context: TestContext, mountOptions: readonly string[]): Promise<void> {
  const { namespace, driver } = context;
  const storageClass = await namespace.createClass({ mountOptions });
  const className = storageClass.metadata?.name ?? "";
  const claim = await namespace.createClaim(className);
  const claimName = claim.metadata?.name ?? "";
  const volume = await namespace.waitBound(claimName);
  checkProvisionedVolume(volume, driver, className);
  const onVolume = volume.spec?.mountOptions ?? [];
  const missing = mountOptions.filter((option) => !onVolume.includes(option));
  if (missing.length > 0)
    throw new E2eCheckError(
      `PV ${volume.metadata?.name} lacks the class's mount options ${missing.join(",")} (has ${onVolume.join(",") || "none"})`,
    );
  await writeReadCheck(namespace, claimName);
}

export const provisioningSuite: Suite = {
  name: "provisioning",
  patterns: [DYNAMIC_PV_DEFAULT_FS],
  tests: [
    {
      name: "should provision storage with defaults",
      run: (context) => provision(context, []),
    },
    {
      name: "should provision storage with mount options",
      skipReason: (driver) =>
        driver.supportedMountOptions.length === 0
          ? `Driver ${driver.name} does not define supported mount option (SupportedMountOption)`
          : undefined,
      run: (context) => provision(context, context.driver.supportedMountOptions),
    },
  ],
};
