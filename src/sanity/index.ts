// csikit sanity: a CSI conformance suite runnable against any driver endpoint. Tests derive from
// the CSI v1.12.0 spec's MUST/SHOULD rules; each is gated on the capabilities the driver
// reports, cleans up after itself, and reports passed, failed or skipped (with the reason).

export { runSanity } from "./runner.ts";
export type { RunOptions } from "./runner.ts";
export {
  DEFAULT_TEST_VOLUME_SIZE,
  SECRET_KEYS,
  loadParametersFile,
  loadSecretsFile,
  loadTopologyFile,
  parseByteQuantity,
} from "./config.ts";
export type { SanityOptions, SanitySecrets } from "./config.ts";
export {
  formatGinkgoJSON,
  formatJUnit,
  formatTeamCity,
  formatText,
  resultLine,
  summaryLine,
  textReporter,
  textSummary,
} from "./report.ts";
export type { Outcome, SanityReport, TestResult, TextReportOptions } from "./report.ts";
export { parseLabelFilter, testLabels } from "./label-filter.ts";
export type { LabelPredicate } from "./label-filter.ts";
export { catalogue } from "./tests/index.ts";
export { describe, fullName } from "./framework.ts";
export type { Requirement, SanityTest, ServiceName } from "./framework.ts";
export type { TestContext } from "./context.ts";
