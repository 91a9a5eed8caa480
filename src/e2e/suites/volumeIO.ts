// Upstream's volumeIO suite (test/e2e/storage/testsuites/volumeio.go): files of several sizes,
// made of a repeated known pattern, are written into the volume through a pod; each one's size
// and content (its md5) are checked through the pod, then the file is removed. Upstream's sizes
// start at 1 MiB; csikit's volumes are the suite's minimum size, so the sizes here are bounded by
// half the claim's size (the largest file still fits with the file system's own overhead).

import { createHash, randomBytes } from "node:crypto";
import { bytesOf, E2eCheckError } from "../model.ts";
import { MOUNT_PATH } from "../resources.ts";
import type { SuiteImplementation } from "../suite.ts";
import { podVolume } from "./checks.ts";

const KIB = 1024;

/** The sizes written: 1 KiB, 32 KiB and the largest of 256 KiB .. 1 MiB fitting half the volume. */
export function fileSizes(volumeBytes: number): number[] {
  const half = Math.floor(volumeBytes / 2);
  const largest = Math.min(1024 * KIB, Math.max(256 * KIB, half));
  return [KIB, 32 * KIB, largest].filter(
    (size, index, all) => size <= Math.max(half, KIB) && all.indexOf(size) === index,
  );
}

export const volumeIOTests: SuiteImplementation = {
  suite: "volumeIO",
  tests: {
    "should write files of various sizes, verify size, validate content": async ({ namespace }) => {
      const volume = await namespace.createVolume();
      const pod = await namespace.runPod({ volumes: [podVolume(volume)] });
      // The pattern: 1 KiB of printable text, repeated to each size.
      const pattern = randomBytes(KIB / 2).toString("hex");
      for (const size of fileSizes(Number(bytesOf(namespace.claimSize)))) {
        const content = pattern.repeat(Math.ceil(size / KIB)).slice(0, size);
        const file = `${MOUNT_PATH}/csikit_io_test_${size}`;
        await namespace.execOk(pod, `cat > ${file} && sync`, content);
        const out = await namespace.execOk(pod, `wc -c < ${file} && md5sum ${file}`);
        const [sizeLine = "", sumLine = ""] = out.trim().split("\n");
        if (Number(sizeLine.trim()) !== size)
          throw new E2eCheckError(`file ${file} is ${sizeLine.trim()} bytes, want ${size}`);
        const want = createHash("md5").update(content).digest("hex");
        const got = sumLine.trim().split(/\s+/)[0];
        if (got !== want) throw new E2eCheckError(`file ${file} has md5 ${got}, want ${want}`);
        await namespace.execOk(pod, `rm ${file}`);
      }
    },
  },
};
