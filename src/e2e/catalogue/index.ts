// The facts `csikit e2e` needs to name and gate tests exactly as upstream's external storage
// suites do: the test driver definition file, the test patterns, the suites and their tests.
// Pure data and parsing; imports node builtins and the yaml package only.

export {
  CAPABILITIES,
  DEFAULT_TIMEOUTS,
  TestDriverError,
  classSourceKind,
  effectiveTimeouts,
  loadTestDriver,
  parseGoDuration,
  parseTestDriver,
} from "./test-driver.ts";
export type {
  Capability,
  ClassSource,
  DriverDefinition,
  DriverInfo,
  InlineVolume,
  ParseOptions,
  ParseResult,
  SizeRange,
  TimeoutKey,
} from "./test-driver.ts";
export { PATTERNS, hasPattern, patternById } from "./patterns.ts";
export type {
  BindingMode,
  SnapshotDeletionPolicy,
  SnapshotType,
  TestPattern,
  VolMode,
  VolType,
} from "./patterns.ts";
export { SUITES, suiteByName } from "./suites.ts";
export type { SkipContext, SkipRule, Suite, SuiteTest } from "./suites.ts";
export { driverPatternSkip, planTests, testName } from "./plan.ts";
export type { PlanOptions, PlannedTest } from "./plan.ts";
