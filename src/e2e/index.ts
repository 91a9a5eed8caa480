// `csikit e2e`: Kubernetes' external storage e2e suites against a CSI driver (issue 29).
export { runE2e, selectedTests, type E2eOptions } from "./e2e.ts";
export { bytesOf, claimSize, e2eTimeouts, E2eCheckError, E2eSkip, type E2eTimeouts } from "./model.ts";
export type { NodeProcesses, SuiteImplementation, TestBody, TestContext } from "./suite.ts";
export {
  NOT_IMPLEMENTED,
  runTests,
  runsAlone,
  selectTests,
  type Outcome,
  type TestResult,
} from "./runner.ts";
export { junitXml, matrixRows, renderMatrix, resultLine, xmlEscape } from "./report.ts";
export { TestNamespace, MOUNT_PATH, mountPath, namespaceName, type VolumeResource } from "./resources.ts";
export { IMPLEMENTATIONS, bodyOf } from "./suites/index.ts";
export { startUpCluster, type UpCluster } from "./up-process.ts";
export * from "./catalogue/index.ts";
