// How `csikit why` prints a diagnosis: text for a person (one line per link done, the first
// link not done in full: cause, who is responsible, details, last events, next commands), or
// JSON for tools (the Diagnosis as it is, a contract: see model.ts).

import type { Diagnosis, Link } from "./model.ts";

const MARK: Record<Link["state"], string> = { done: "✓", waiting: "…", failed: "✗" };

/** The target as `kind namespace/name`. */
function targetLabel(diagnosis: Diagnosis): string {
  const { target } = diagnosis;
  return `${target.kind} ${target.namespace ? `${target.namespace}/` : ""}${target.name}`;
}

export function renderText(diagnosis: Diagnosis): string {
  const lines = [`${targetLabel(diagnosis)}: ${diagnosis.phase}`];
  const width = Math.max(...diagnosis.links.map((l) => l.step.length), 4);
  for (const item of diagnosis.links) {
    const head = `  ${MARK[item.state]} ${item.step.padEnd(width)}  `;
    if (item.state === "done") {
      lines.push(`${head}${item.summary}`);
      continue;
    }
    lines.push(`${head}${item.state}: ${item.summary}`);
    const pad = " ".repeat(6);
    if (item.object) lines.push(`${pad}object:      ${item.object}`);
    if (item.cause) lines.push(`${pad}cause:       ${item.cause}`);
    if (item.responsible) {
      const via = [
        item.responsible.finalizer ? `finalizer ${item.responsible.finalizer}` : undefined,
        item.responsible.annotation ? `annotation ${item.responsible.annotation}` : undefined,
      ].filter((x) => x !== undefined);
      lines.push(
        `${pad}responsible: ${item.responsible.component}${via.length > 0 ? ` (${via.join(", ")})` : ""}`,
      );
    }
    for (const detail of item.details) lines.push(`${pad}note:        ${detail}`);
    if (item.events.length > 0) {
      lines.push(`${pad}last events:`);
      for (const event of item.events)
        lines.push(
          `${pad}  ${event.type} ${event.reason}${event.count > 1 ? ` (x${event.count})` : ""} on ${event.object}${event.last ? ` at ${event.last}` : ""}: ${event.message}`,
        );
    }
    for (const [index, command] of item.next.entries())
      lines.push(`${pad}${index === 0 ? "next:        " : "             "}${command}`);
  }
  if (diagnosis.done) lines.push("  every link is done");
  return `${lines.join("\n")}\n`;
}

export function renderJson(diagnosis: Diagnosis): string {
  return `${JSON.stringify(diagnosis, null, 2)}\n`;
}
