// The report as a person reads it (text) or a program does (-o json: the report object as is,
// one JSON document).

import type { DoctorReport } from "./doctor.ts";

export function renderJson(report: DoctorReport): string {
  return JSON.stringify(report, null, 2) + "\n";
}

export function renderText(report: DoctorReport): string {
  const lines: string[] = [];
  if (report.driverName) lines.push(`driver: ${report.driverName}`);
  for (const note of report.notes) lines.push(note);
  if (lines.length > 0) lines.push("");
  for (const finding of report.findings) {
    lines.push(`${finding.kind}: ${finding.object}`);
    lines.push(`  why: ${finding.why}`);
    if (finding.fix) lines.push(`  fix: ${finding.fix.description}`);
    if (finding.manual) lines.push(`  by hand: ${finding.manual}`);
  }
  const fixable = report.findings.filter((f) => f.fix).length;
  if (report.findings.length === 0) lines.push("no findings: nothing left over or stuck");
  else {
    if (lines.at(-1) !== "") lines.push("");
    lines.push(
      `${report.findings.length} finding${report.findings.length === 1 ? "" : "s"}: ${fixable} fixable with --fix, ${report.findings.length - fixable} to handle by hand`,
    );
  }
  if (report.fixes) {
    lines.push("");
    for (const fix of report.fixes)
      lines.push(`${fix.status}: ${fix.description}${fix.message ? ` (${fix.message})` : ""}`);
    lines.push(`${report.remaining} finding${report.remaining === 1 ? "" : "s"} left`);
  }
  return lines.join("\n") + "\n";
}
