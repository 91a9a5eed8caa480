// What a run tells its reader: a line per test as it ends (outcome, time, name, and why for a
// failure or skip), a JUnit XML report in the shape ginkgo writes and CI consumers read
// (<testsuites><testsuite tests failures skipped time><testcase name classname time> with a
// <failure message type> or <skipped message> child), and the closing matrix: suite × test
// pattern, passed/failed/skipped.

import type { TestResult } from "./runner.ts";

const MARK = { passed: "✓", failed: "✗", skipped: "-" } as const;

/** One line per ended test: `✓ 3.2s External Storage [...] volumes should store data`. */
export function resultLine(result: TestResult): string {
  const time = `${result.seconds.toFixed(1)}s`;
  const why =
    result.message !== undefined
      ? ` — ${result.outcome === "skipped" ? "skipped: " : ""}${result.message}`
      : "";
  return `${MARK[result.outcome]} ${time.padStart(7)} ${result.fullName}${why}`;
}

export interface MatrixRow {
  suite: string;
  pattern: string;
  passed: number;
  failed: number;
  skipped: number;
}

/** Counts per (suite, pattern), in the order the results came. */
export function matrixRows(results: readonly TestResult[]): MatrixRow[] {
  const rows = new Map<string, MatrixRow>();
  for (const result of results) {
    const key = `${result.suite}\u0000${result.pattern}`;
    let row = rows.get(key);
    if (!row) {
      row = { suite: result.suite, pattern: result.pattern, passed: 0, failed: 0, skipped: 0 };
      rows.set(key, row);
    }
    row[result.outcome]++;
  }
  return [...rows.values()];
}

/** The closing matrix as aligned text, with a total line. */
export function renderMatrix(results: readonly TestResult[]): string {
  const rows = matrixRows(results);
  const header = ["SUITE", "TEST PATTERN", "PASSED", "FAILED", "SKIPPED"];
  const total = (outcome: "passed" | "failed" | "skipped"): string =>
    String(rows.reduce((sum, row) => sum + row[outcome], 0));
  const body = rows.map((r) => [r.suite, r.pattern, String(r.passed), String(r.failed), String(r.skipped)]);
  const table = [header, ...body, ["total", "", total("passed"), total("failed"), total("skipped")]];
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  return (
    table
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join("  ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}

/** XML 1.0 text and attribute escaping; characters XML cannot carry at all are dropped. */
export function xmlEscape(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** The JUnit report of one run, one <testsuite> named like ginkgo's ("Kubernetes e2e suite"). */
export function junitXml(results: readonly TestResult[], options: { name?: string } = {}): string {
  const count = (outcome: string): number => results.filter((r) => r.outcome === outcome).length;
  const time = results.reduce((sum, r) => sum + r.seconds, 0).toFixed(3);
  const name = xmlEscape(options.name ?? "Kubernetes e2e suite");
  const cases = results.map((r) => {
    const open = `    <testcase name="${xmlEscape(r.fullName)}" classname="${name}" status="${r.outcome}" time="${r.seconds.toFixed(3)}"`;
    if (r.outcome === "passed") return `${open}></testcase>`;
    const message = xmlEscape(r.message ?? "");
    const child =
      r.outcome === "skipped"
        ? `<skipped message="${message}"></skipped>`
        : `<failure message="${message}" type="failed">${message}</failure>`;
    return `${open}>\n      ${child}\n    </testcase>`;
  });
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites tests="${results.length}" disabled="0" errors="0" failures="${count("failed")}" time="${time}">`,
    `  <testsuite name="${name}" tests="${results.length}" disabled="0" errors="0" failures="${count("failed")}" skipped="${count("skipped")}" time="${time}">`,
    ...cases,
    `  </testsuite>`,
    `</testsuites>`,
    "",
  ].join("\n");
}
