// Upstream's volumes suite (test/e2e/storage/testsuites/volumes.go) on a dynamically provisioned
// filesystem volume: data written through one pod is read back through another, and a file on
// the volume can be executed (for drivers claiming the exec capability). Persistence is required,
// as upstream skips the suite for drivers that do not keep data.

import { DYNAMIC_PV_DEFAULT_FS, requireCapability } from "../model.ts";
import type { Suite } from "../suite.ts";
import { E2eCheckError, MOUNT_PATH } from "../resources.ts";
import { writeReadCheck } from "./checks.ts";

export const volumesSuite: Suite = {
  name: "volumes",
  patterns: [DYNAMIC_PV_DEFAULT_FS],
  tests: [
    {
      name: "should store data",
      skipReason: requireCapability("persistence"),
      async run({ namespace }) {
        const storageClass = await namespace.createClass();
        const claim = await namespace.createClaim(storageClass.metadata?.name ?? "");
        const claimName = claim.metadata?.name ?? "";
        await namespace.waitBound(claimName);
        await writeReadCheck(namespace, claimName);
      },
    },
    {
      name: "should allow exec of files on the volume",
      skipReason: (driver) => requireCapability("exec")(driver) ?? requireCapability("persistence")(driver),
      async run({ namespace }) {
        const storageClass = await namespace.createClass();
        const claim = await namespace.createClaim(storageClass.metadata?.name ?? "");
        const claimName = claim.metadata?.name ?? "";
        await namespace.waitBound(claimName);
        const pod = await namespace.createPod(claimName);
        const podName = pod.metadata?.name ?? "";
        await namespace.waitRunning(podName);
        const script = `${MOUNT_PATH}/hello.sh`;
        // a+x, not only o+x: what is tested is that the volume is not mounted noexec. A pod in
        // csikit's sandbox runs with every capability dropped, so even uid 0 there has no
        // CAP_DAC_OVERRIDE and needs the owner's execute bit.
        const out = await namespace.execOk(
          podName,
          `echo 'echo "Hello World"' > ${script} && chmod a+x ${script} && ${script}`,
        );
        if (out.trim() !== "Hello World")
          throw new E2eCheckError(
            `executing ${script} on the volume printed ${JSON.stringify(out)}, want "Hello World"`,
          );
      },
    },
  ],
};
