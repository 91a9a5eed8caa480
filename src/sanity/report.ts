// Results of a sanity run and the two ways they are printed: a text report (one line per test,
// grouped by service, closing with exactly `N passed, N failed, N skipped`) and JUnit XML for CI
// systems. Both are pure functions of the results, so tests can check them byte for byte.

import type { ServiceName } from "./gates.ts";

export type Outcome = "passed" | "failed" | "skipped";

export interface TestResult {
  service: ServiceName;
  group: string;
  name: string;
  outcome: Outcome;
  /** Failure message, or the reason for a skip. */
  reason?: string;
  durationMs: number;
}

export interface SanityReport {
  results: TestResult[];
  passed: number;
  failed: number;
  skipped: number;
  durationMs: number;
  /** Problems outside any one test (temp dirs left behind, ...), printed after the results. */
  warnings: string[];
}

export function summarize(
  results: readonly TestResult[],
  durationMs: number,
  warnings: string[],
): SanityReport {
  const count = (outcome: Outcome): number => results.filter((r) => r.outcome === outcome).length;
  return {
    results: [...results],
    passed: count("passed"),
    failed: count("failed"),
    skipped: count("skipped"),
    durationMs,
    warnings,
  };
}

/** The closing line, exactly `N passed, N failed, N skipped`. */
export function summaryLine(report: Pick<SanityReport, "passed" | "failed" | "skipped">): string {
  return `${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`;
}

/** One result line, without indentation: `✔ name`, `✖ name: reason`, `- name (skipped: why)`. */
export function resultLine(result: TestResult): string {
  const name = `${result.group}: ${result.name}`;
  switch (result.outcome) {
    case "passed":
      return `✔ ${name}`;
    case "failed":
      return `✖ ${name}: ${oneLine(result.reason ?? "failed")}`;
    case "skipped":
      return `- ${name} (skipped: ${oneLine(result.reason ?? "no reason given")})`;
  }
}

/** How much the text report shows; each field maps a Ginkgo reporter flag (docs/sanity.md). */
export interface TextReportOptions {
  /** `succinct`: failed tests only (-ginkgo.succinct); `verbose`: also each test's duration (-ginkgo.vv). Default every test. */
  verbosity?: "succinct" | "normal" | "verbose";
  /** Leave skipped tests out (-ginkgo.silence-skips). Default false. */
  silenceSkips?: boolean;
  /** Failure reasons as the test gave them, over several lines (-ginkgo.trace). Default one line. */
  fullReasons?: boolean;
  /** Also a `::error title=…::…` line per failure for GitHub Actions (-ginkgo.github-output). Default false. */
  githubOutput?: boolean;
}

/**
 * Streams the text report: a service header when the service changes, then the result lines.
 * Returns a function to call per result, in run order.
 */
export function textReporter(
  write: (text: string) => void,
  options: TextReportOptions = {},
): (result: TestResult) => void {
  let service: ServiceName | undefined;
  return (result) => {
    if (options.verbosity === "succinct" && result.outcome !== "failed") return;
    if (options.silenceSkips && result.outcome === "skipped") return;
    if (result.service !== service) {
      service = result.service;
      write(`${service}\n`);
    }
    let line = resultLine(result);
    if (options.fullReasons && result.outcome === "failed")
      line = `✖ ${result.group}: ${result.name}:\n${(result.reason ?? "failed").replace(/^/gm, "      ")}`;
    if (options.verbosity === "verbose") line += ` [${(result.durationMs / 1000).toFixed(3)}s]`;
    write(`  ${line}\n`);
    if (options.githubOutput && result.outcome === "failed")
      write(
        `::error title=${gitHubEscape(`${result.group}: ${result.name}`)}::${gitHubEscape(result.reason ?? "failed")}\n`,
      );
  };
}

/** GitHub Actions workflow-command escaping of a property or message. */
function gitHubEscape(text: string): string {
  return text
    .replace(/%/g, "%25")
    .replace(/\r/g, "%0D")
    .replace(/\n/g, "%0A")
    .replace(/:/g, "%3A")
    .replace(/,/g, "%2C");
}

/** The text printed after the results: warnings, then the summary line. */
export function textSummary(report: SanityReport): string {
  const lines = report.warnings.map((w) => `warning: ${w}`);
  lines.push(summaryLine(report));
  return lines.join("\n") + "\n";
}

/** The whole text report at once (results grouped by service, then the summary). */
export function formatText(report: SanityReport): string {
  let out = "";
  const report1 = textReporter((text) => (out += text));
  for (const result of report.results) report1(result);
  return out + textSummary(report);
}

const SERVICE_ORDER: readonly ServiceName[] = ["Identity", "Controller", "Node", "GroupController"];

/** JUnit XML: one <testsuite> per service, one <testcase> per test (classname `Service.Group`). */
export function formatJUnit(report: SanityReport): string {
  const seconds = (ms: number): string => (ms / 1000).toFixed(3);
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="csikit sanity" tests="${report.results.length}" failures="${report.failed}" ` +
      `skipped="${report.skipped}" errors="0" time="${seconds(report.durationMs)}">`,
  ];
  const services = [...new Set(report.results.map((r) => r.service))].sort(
    (a, b) => SERVICE_ORDER.indexOf(a) - SERVICE_ORDER.indexOf(b),
  );
  for (const service of services) {
    const results = report.results.filter((r) => r.service === service);
    const failures = results.filter((r) => r.outcome === "failed").length;
    const skipped = results.filter((r) => r.outcome === "skipped").length;
    const time = results.reduce((sum, r) => sum + r.durationMs, 0);
    lines.push(
      `  <testsuite name="${xml(service)}" tests="${results.length}" failures="${failures}" ` +
        `skipped="${skipped}" errors="0" time="${seconds(time)}">`,
    );
    for (const r of results) {
      const open = `    <testcase classname="${xml(`${service}.${r.group}`)}" name="${xml(r.name)}" time="${seconds(r.durationMs)}"`;
      if (r.outcome === "passed") {
        lines.push(`${open}/>`);
      } else if (r.outcome === "failed") {
        const reason = r.reason ?? "failed";
        lines.push(`${open}>`, `      <failure message="${xml(oneLine(reason))}">${xml(reason)}</failure>`);
        lines.push(`    </testcase>`);
      } else {
        lines.push(
          `${open}>`,
          `      <skipped message="${xml(oneLine(r.reason ?? ""))}"/>`,
          `    </testcase>`,
        );
      }
    }
    lines.push(`  </testsuite>`);
  }
  lines.push(`</testsuites>`);
  return lines.join("\n") + "\n";
}

/** Escapes text for XML attributes and content; drops characters XML 1.0 cannot carry. */
export function xml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "\uFFFD")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

/**
 * Ginkgo's JSON report shape (-ginkgo.json-report), the fields a reader of it uses: one suite
 * with a SpecReport per test (container texts `[service, group]`, leaf text the test name,
 * State passed/failed/skipped, RunTime in nanoseconds as Go encodes a time.Duration).
 */
export function formatGinkgoJSON(report: SanityReport, startedAt: Date): string {
  const ns = (ms: number): number => Math.round(ms * 1e6);
  const end = new Date(startedAt.getTime() + report.durationMs);
  return (
    JSON.stringify(
      [
        {
          SuitePath: "csikit sanity",
          SuiteDescription: "csikit sanity",
          SuiteSucceeded: report.failed === 0,
          StartTime: startedAt.toISOString(),
          EndTime: end.toISOString(),
          RunTime: ns(report.durationMs),
          PreRunStats: { TotalSpecs: report.results.length, SpecsThatWillRun: report.results.length },
          SpecReports: report.results.map((r) => ({
            ContainerHierarchyTexts: [r.service, r.group],
            LeafNodeType: "It",
            LeafNodeText: r.name,
            State: r.outcome,
            RunTime: ns(r.durationMs),
            ...(r.outcome === "failed" ? { Failure: { Message: r.reason ?? "failed" } } : {}),
            ...(r.outcome === "skipped" ? { Failure: { Message: r.reason ?? "" } } : {}),
          })),
        },
      ],
      null,
      2,
    ) + "\n"
  );
}

/** TeamCity service messages (-ginkgo.teamcity-report): one suite, a start/finish per test. */
export function formatTeamCity(report: SanityReport): string {
  const esc = (text: string): string =>
    text
      .replace(/\|/g, "||")
      .replace(/'/g, "|'")
      .replace(/\n/g, "|n")
      .replace(/\r/g, "|r")
      .replace(/\[/g, "|[")
      .replace(/]/g, "|]");
  const lines = [`##teamcity[testSuiteStarted name='csikit sanity']`];
  for (const r of report.results) {
    const name = esc(`${r.service} ${r.group} ${r.name}`);
    lines.push(`##teamcity[testStarted name='${name}']`);
    if (r.outcome === "failed")
      lines.push(
        `##teamcity[testFailed name='${name}' message='${esc(oneLine(r.reason ?? "failed"))}' details='${esc(r.reason ?? "")}']`,
      );
    if (r.outcome === "skipped")
      lines.push(`##teamcity[testIgnored name='${name}' message='${esc(r.reason ?? "")}']`);
    lines.push(`##teamcity[testFinished name='${name}' duration='${Math.round(r.durationMs)}']`);
  }
  lines.push(`##teamcity[testSuiteFinished name='csikit sanity']`);
  return lines.join("\n") + "\n";
}
