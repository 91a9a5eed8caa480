// How `csikit csi` prints a response: YAML (the default), JSON, or a table. A streamed response
// is printed message by message as each arrives: YAML documents separated by `---`, one JSON
// object per line, or table rows under one header.

import { stringify } from "yaml";

export const OUTPUT_FORMATS = ["yaml", "json", "table"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

type Leaves = [string, string][];

/**
 * A map such as topology segments or a volume context, printed as key=value pairs in one cell:
 * string values under a key no proto field could have (a label key: dots, slashes, dashes).
 */
function isLabelMap(value: object): boolean {
  const entries = Object.entries(value);
  return entries.length > 0 && entries.every(([key, item]) => typeof item === "string" && /[./-]/.test(key));
}

/** Leaf fields of a message as dotted paths; lists of scalars joined with commas. */
function flatten(value: unknown, prefix: string, out: Leaves): Leaves {
  if (Array.isArray(value) && value.every((item) => typeof item !== "object" || item === null)) {
    out.push([prefix, value.map(String).join(",")]);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => flatten(item, `${prefix}[${i}]`, out));
  } else if (typeof value === "object" && value !== null && isLabelMap(value)) {
    out.push([
      prefix,
      Object.entries(value)
        .map(([key, item]) => `${key}=${String(item)}`)
        .join(","),
    ]);
  } else if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value);
    if (entries.length === 0 && prefix !== "") out.push([prefix, ""]);
    for (const [key, item] of entries) flatten(item, prefix === "" ? key : `${prefix}.${key}`, out);
  } else if (prefix !== "") {
    out.push([
      prefix,
      value === null || value === undefined
        ? ""
        : typeof value === "string"
          ? value
          : (JSON.stringify(value) ?? ""),
    ]);
  }
  return out;
}

/** The one list of messages a response carries (entries, capabilities, block_metadata), if any. */
function listField(message: Record<string, unknown>): string | undefined {
  const lists = Object.entries(message).filter(
    ([, value]) =>
      Array.isArray(value) &&
      value.length > 0 &&
      value.every((item) => typeof item === "object" && item !== null),
  );
  return lists.length === 1 ? lists[0]![0] : undefined;
}

function columns(rows: readonly Leaves[]): string[] {
  const names: string[] = [];
  for (const row of rows) for (const [name] of row) if (!names.includes(name)) names.push(name);
  return names;
}

function align(lines: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const line of lines) line.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return (
    lines
      .map((line) =>
        line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "),
      )
      .join("\n") + "\n"
  );
}

/**
 * A table of one message: a response with one list of messages prints one row per element
 * (columns = their leaf fields) and its other fields below; any other prints FIELD and VALUE.
 * `header` false leaves out the header line (later messages of a stream).
 */
export function formatTable(message: unknown, header = true): string {
  const record = typeof message === "object" && message !== null ? (message as Record<string, unknown>) : {};
  const list = listField(record);
  if (list === undefined) {
    const leaves = flatten(record, "", []);
    if (leaves.length === 0) return header ? "(empty response)\n" : "";
    return align([...(header ? [["FIELD", "VALUE"]] : []), ...leaves]);
  }
  const rows = (record[list] as unknown[]).map((item) => flatten(item, "", []));
  const names = columns(rows);
  const lines = rows.map((row) => names.map((name) => row.find(([key]) => key === name)?.[1] ?? ""));
  // Entries wrapped in one message ({snapshot: {...}}) need not repeat "snapshot." in every column.
  const shared = /^[^.[]+\./.exec(names[0] ?? "")?.[0];
  const titles =
    shared && names.every((name) => name.startsWith(shared))
      ? names.map((name) => name.slice(shared.length))
      : names;
  const rest = flatten(
    Object.fromEntries(Object.entries(record).filter(([key]) => key !== list)),
    "",
    [],
  ).filter(([, value]) => value !== "");
  return (
    align([...(header ? [titles.map((name) => name.toUpperCase())] : []), ...lines]) +
    rest.map(([key, value]) => `${key}: ${value}\n`).join("")
  );
}

/** One response, or one message of a stream (`index` counts them from 0). */
export function formatMessage(format: OutputFormat, message: unknown, stream = false, index = 0): string {
  switch (format) {
    case "json":
      return stream ? `${JSON.stringify(message)}\n` : `${JSON.stringify(message, null, 2)}\n`;
    case "yaml":
      return `${stream ? "---\n" : ""}${stringify(message)}`;
    case "table":
      return formatTable(message, index === 0);
  }
}
