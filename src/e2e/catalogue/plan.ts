// Full upstream test names and the plan for one driver definition: every (suite, pattern, test)
// upstream would define for an external driver, with its exact name and, where the definition
// alone decides it, the skip message upstream would report.
//
// Name shape (upstream's framework joins each container's texts and tags with one space, and
// Ginkgo joins the containers and the It with one more):
//   External Storage [Driver: <name>] <driver tags> [Testpattern: <pattern>] <pattern tags>
//     <suite> <suite tags> <containers...> <It title> <It tags>
// An unnamed Context ("") therefore shows up as a double space, as it does upstream.

import { patternById } from "./patterns.ts";
import type { TestPattern } from "./patterns.ts";
import { SUITES } from "./suites.ts";
import type { SkipContext, SkipRule, Suite, SuiteTest } from "./suites.ts";
import type { DriverDefinition } from "./test-driver.ts";

export function testName(
  driver: DriverDefinition,
  pattern: TestPattern,
  suite: Suite,
  test: SuiteTest,
): string {
  return [
    "External Storage",
    `[Driver: ${driver.DriverInfo.Name}]`,
    ...driver.DriverInfo.TestTags,
    `[Testpattern: ${pattern.name}]`,
    ...pattern.tags,
    suite.name,
    ...suite.tags,
    ...test.containers,
    test.title,
    ...test.tags,
  ].join(" ");
}

export interface PlannedTest {
  name: string;
  suite: Suite;
  pattern: TestPattern;
  test: SuiteTest;
  /** Upstream's skip message when the definition alone rules the test out; null = runs. */
  skip: string | null;
}

export interface PlanOptions {
  /** framework.TestContext.NodeOSDistro; only used for the xfs/ntfs checks. Default "debian". */
  nodeOSDistro?: string;
}

/** Every test upstream would define for this driver, in upstream's order. */
export function planTests(driver: DriverDefinition, options: PlanOptions = {}): PlannedTest[] {
  const out: PlannedTest[] = [];
  for (const suite of SUITES) {
    for (const id of suite.patterns) {
      const pattern = patternById(id);
      const c: SkipContext = { pattern, driver };
      const patternSkip = driverPatternSkip(c, options.nodeOSDistro ?? "debian") ?? firstSkip(suite.skips, c);
      for (const test of suite.tests) {
        if (test.registeredWhen !== undefined && !test.registeredWhen(c)) continue;
        out.push({
          name: testName(driver, pattern, suite, test),
          suite,
          pattern,
          test,
          skip: patternSkip ?? firstSkip(test.skips, c),
        });
      }
    }
  }
  return out;
}

function firstSkip(rules: readonly SkipRule[], c: SkipContext): string | null {
  const hit = rules.find((r) => r.when(c));
  return hit === undefined ? null : hit.message(c);
}

/**
 * The checks every suite runs first: the external driver's own SkipUnsupportedTest (which volume
 * types its definition enables), then the framework's SkipInvalidDriverPatternCombination (file
 * system support, node OS).
 */
export function driverPatternSkip(c: SkipContext, nodeOSDistro = "debian"): string | null {
  const { driver, pattern } = c;
  const info = driver.DriverInfo;
  const sc = driver.StorageClass;
  let supported: boolean;
  switch (pattern.volType) {
    case "DynamicPV":
    case "GenericEphemeralVolume":
      supported = sc.FromName || sc.FromFile !== "" || sc.FromExistingClassName !== "";
      break;
    case "CSIInlineVolume":
      supported = driver.InlineVolumes.length > 0;
      break;
    case "InlineVolume":
    case "PreprovisionedPV":
      supported = false;
      break;
  }
  if (!supported)
    return `Driver ${JSON.stringify(info.Name)} does not support volume type ${JSON.stringify(pattern.volType)} - skipping`;
  if (!info.SupportedFsType.includes(pattern.fsType))
    return `Driver ${info.Name} doesn't support ${pattern.fsType} -- skipping`;
  const windows = nodeOSDistro === "windows";
  if (pattern.fsType === "xfs" && windows) return "Distro doesn't support xfs -- skipping";
  if (pattern.fsType === "ntfs" && !windows) return `Distro ${nodeOSDistro} doesn't support ntfs -- skipping`;
  return null;
}
