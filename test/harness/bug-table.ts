// Which tests of `csikit e2e` must fail for each seeded bug (scripts/bug-seeded-driver.ts), and which must still
// pass beside them: a suite that fails everything proves nothing, so every row names tests that
// do not touch the seeded path (its controls). runRow starts `csikit e2e` on the bug-seeded
// driver with exactly those tests and reads their outcomes from the JUnit report.

import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
/** The seeded bugs scripts/bug-seeded-driver.ts knows. */
export const BUGS = ["publish-no-bind", "expand-lies", "snapshot-empty", "block-as-fs"] as const;
export type Bug = (typeof BUGS)[number];

const DRIVER = join(import.meta.dirname, "..", "..", "scripts", "bug-seeded-driver.ts");
const MAIN = join(import.meta.dirname, "..", "..", "src", "cli", "main.ts");

/** A test by its pattern and what follows it in the full name (suite and It title). */
export interface TestRef {
  pattern: string;
  test: string;
}

export interface BugRow {
  bug: Bug;
  /** What the bug does, for the table. */
  what: string;
  /** Tests that must fail. */
  caughtBy: readonly TestRef[];
  /** Tests that must pass on the same driver. */
  controls: readonly TestRef[];
}

const DEFAULT_FS = "Dynamic PV (default fs)";
const BLOCK = "Dynamic PV (block volmode)";

export const BUG_TABLE: readonly BugRow[] = [
  {
    bug: "publish-no-bind",
    what: "NodePublishVolume answers OK without binding the volume",
    caughtBy: [
      { pattern: DEFAULT_FS, test: "volumes should store data" },
      { pattern: DEFAULT_FS, test: "provisioning should provision storage with mount options" },
    ],
    // Writing and running a file in one pod works on any directory: this test checks noexec only.
    controls: [{ pattern: DEFAULT_FS, test: "volumes should allow exec of files on the volume" }],
  },
  {
    bug: "block-as-fs",
    what: "NodePublishVolume publishes a raw block volume as a file system",
    caughtBy: [{ pattern: BLOCK, test: "volumes should store data" }],
    controls: [{ pattern: DEFAULT_FS, test: "volumes should store data" }],
  },
  {
    bug: "expand-lies",
    what: "ControllerExpandVolume and NodeExpandVolume report the size asked for and change nothing",
    caughtBy: [
      { pattern: `${BLOCK}(allowExpansion)`, test: "volume-expand Verify if offline PVC expansion works" },
    ],
    controls: [{ pattern: DEFAULT_FS, test: "volumes should store data" }],
  },
  {
    bug: "snapshot-empty",
    what: "CreateSnapshot snapshots an empty volume instead of the source",
    caughtBy: [
      { pattern: DEFAULT_FS, test: "provisioning should provision storage with snapshot data source" },
    ],
    controls: [{ pattern: DEFAULT_FS, test: "provisioning should provision storage with pvc data source" }],
  },
];

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The focus regex selecting exactly these tests (upstream's tags may follow the title). */
export function focusOf(tests: readonly TestRef[]): string {
  return tests
    .map((t) => `\\[Testpattern: ${escape(t.pattern)}\\] ${escape(t.test)}( \\[[^\\]]*\\])*$`)
    .join("|");
}

/** A test's outcome in the JUnit report: "passed", "failed", "skipped", or "missing". */
export function outcomeIn(xml: string, ref: TestRef): string {
  const name = `[Testpattern: ${ref.pattern}] ${ref.test}`.replace(/&/g, "&amp;").replace(/"/g, "&quot;");
  const found = new RegExp(`${escape(name)}(?: \\[[^\\]"]*\\])*" classname="[^"]*" status="(\\w+)"`).exec(
    xml,
  );
  return found?.[1] ?? "missing";
}

export interface RowResult {
  /** Outcome per test ("passed", "failed", "skipped", or "missing" when not in the report). */
  outcomes: Map<TestRef, string>;
  /** Whether every caught-by test failed and every control passed. */
  ok: boolean;
  output: string;
}

/** Runs one row: csikit e2e on the bug-seeded driver, bounded by `timeoutMs`. */
export async function runRow(
  row: BugRow,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<RowResult> {
  const dir = await mkdtemp(join(tmpdir(), "csikit-bug-"));
  try {
    const junit = join(dir, "junit.xml");
    const tests = [...row.caughtBy, ...row.controls];
    const command = [
      process.execPath,
      DRIVER,
      `--bug=${row.bug}`,
      "--mode={mode}",
      "--endpoint={endpoint}",
      "--nodeid={nodeid}",
      "--statedir={statedir}",
    ].join(" ");
    const child = spawn(
      process.execPath,
      [
        MAIN,
        "e2e",
        `--driver-command=${command}`,
        `--focus=${focusOf(tests)}`,
        `--junit=${junit}`,
        "--nodes=2",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    // SIGTERM lets csikit e2e tear its cluster down; SIGKILL only if that does not end it.
    const stop = (): void => {
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 120_000).unref();
    };
    const timer = setTimeout(stop, options.timeoutMs);
    options.signal?.addEventListener("abort", stop, { once: true });
    await exited;
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", stop);
    const xml = await readFile(junit, "utf8").catch(() => "");
    const outcomes = new Map<TestRef, string>();
    for (const ref of tests) outcomes.set(ref, outcomeIn(xml, ref));
    const ok =
      row.caughtBy.every((ref) => outcomes.get(ref) === "failed") &&
      row.controls.every((ref) => outcomes.get(ref) === "passed");
    return { outcomes, ok, output };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
