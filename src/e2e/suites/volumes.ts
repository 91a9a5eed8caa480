// Upstream's volumes suite (test/e2e/storage/testsuites/volumes.go): data written through one
// pod is read back through another (file system or raw block), and a file on the volume can be
// executed (drivers claiming exec; a volume mounted noexec fails).

import type { SuiteImplementation } from "../suite.ts";
import { E2eCheckError } from "../model.ts";
import { MOUNT_PATH } from "../resources.ts";
import { podVolume, writeReadCheck } from "./checks.ts";

export const volumesTests: SuiteImplementation = {
  suite: "volumes",
  tests: {
    "should store data": async ({ namespace }) => {
      await writeReadCheck(namespace, await namespace.createVolume());
    },
    "should allow exec of files on the volume": async ({ namespace }) => {
      const volume = await namespace.createVolume();
      const pod = await namespace.runPod({ volumes: [podVolume(volume)] });
      const script = `${MOUNT_PATH}/hello.sh`;
      // a+x, not only u+x: what is tested is that the volume is not mounted noexec. A pod in
      // csikit's sandbox runs with every capability dropped, so even uid 0 there has no
      // CAP_DAC_OVERRIDE and needs the owner's execute bit.
      const out = await namespace.execOk(
        pod,
        `echo 'echo "Hello World"' > ${script} && chmod a+x ${script} && ${script}`,
      );
      if (out.trim() !== "Hello World")
        throw new E2eCheckError(
          `executing ${script} on the volume printed ${JSON.stringify(out)}, want "Hello World"`,
        );
    },
  },
};
