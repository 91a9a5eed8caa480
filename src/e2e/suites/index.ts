// csikit's bodies for upstream's storage e2e suites, one module per suite, looked up by suite
// name and It title (the catalogue's). A test the catalogue lists without a body here is reported
// as skipped, "not implemented by csikit e2e".

import type { PlannedTest } from "../catalogue/index.ts";
import type { SuiteImplementation, TestBody } from "../suite.ts";
import { capacityTests } from "./capacity.ts";
import { disruptiveTests } from "./disruptive.ts";
import { ephemeralTests } from "./ephemeral.ts";
import { multiVolumeTests } from "./multiVolume.ts";
import { provisioningTests } from "./provisioning.ts";
import { readWriteOncePodTests } from "./read-write-once-pod.ts";
import { snapshottableTests } from "./snapshottable.ts";
import { subPathTests } from "./subPath.ts";
import { topologyTests } from "./topology.ts";
import { volumeExpandTests } from "./volume-expand.ts";
import { volumeIOTests } from "./volumeIO.ts";
import { volumeModeTests } from "./volumeMode.ts";
import { volumeModifyTests } from "./volume-modify.ts";
import { volumesTests } from "./volumes.ts";

export const IMPLEMENTATIONS: readonly SuiteImplementation[] = [
  provisioningTests,
  volumesTests,
  multiVolumeTests,
  topologyTests,
  capacityTests,
  snapshottableTests,
  ephemeralTests,
  volumeModifyTests,
  volumeExpandTests,
  disruptiveTests,
  readWriteOncePodTests,
  volumeIOTests,
  volumeModeTests,
  subPathTests,
];

const BY_SUITE = new Map(
  IMPLEMENTATIONS.map((implementation) => [implementation.suite, implementation.tests]),
);

/** The body of a planned test, or undefined when csikit has none. */
export function bodyOf(test: PlannedTest): TestBody | undefined {
  return BY_SUITE.get(test.suite.name)?.[test.test.title];
}
