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

/**
 * Streams the text report: a service header when the service changes, then the result lines.
 * Returns a function to call per result, in run order.
 */
export function textReporter(write: (text: string) => void): (result: TestResult) => void {
  let service: ServiceName | undefined;
  return (result) => {
    if (result.service !== service) {
      service = result.service;
      write(`${service}\n`);
    }
    write(`  ${resultLine(result)}\n`);
  };
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
