// `csikit e2e`: Kubernetes' external storage e2e suites against a CSI driver (issue 29).
export { runE2e, SUITES, type E2eOptions } from "./e2e.ts";
export {
  DYNAMIC_PV_DEFAULT_FS,
  DEFAULT_TIMEOUTS,
  fullTestName,
  requireCapability,
  scaleTimeouts,
  type E2eDriver,
  type E2eTimeouts,
  type TestPattern,
} from "./model.ts";
export type { Suite, TestCase, TestContext } from "./suite.ts";
export { planTests, runTests, type Outcome, type PlannedTest, type TestResult } from "./runner.ts";
export { junitXml, matrixRows, renderMatrix, resultLine, xmlEscape } from "./report.ts";
export { TestNamespace, E2eCheckError, MOUNT_PATH, namespaceName } from "./resources.ts";
export { hostpathDriver, parseTestDriver, readTestDriver, DEFAULT_CLAIM_SIZE } from "./test-driver.ts";
export { startUpCluster, type UpCluster } from "./up-process.ts";
