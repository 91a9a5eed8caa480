// Latency bookkeeping shared by the benchmarks: a bounded-concurrency runner that times every
// operation, percentiles, medians over repetitions, and the API server benchmark's Markdown
// table. Nothing here judges a number; it only measures and prints.

export interface RunResult {
  ops: number;
  seconds: number;
  /** Per-operation latency in ms, unsorted. */
  samples: Float64Array;
}

/** Runs op(0..count-1) with at most `concurrency` in flight; stops at the first failure. */
export async function runBounded(
  count: number,
  concurrency: number,
  op: (index: number) => Promise<void>,
): Promise<RunResult> {
  const samples = new Float64Array(count);
  let next = 0;
  let failure: unknown;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < count) {
      const index = next++;
      const t0 = performance.now();
      try {
        await op(index);
      } catch (error) {
        failure ??= error;
        return;
      }
      samples[index] = performance.now() - t0;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  const seconds = (performance.now() - started) / 1000;
  if (failure !== undefined)
    throw failure instanceof Error ? failure : new Error("operation failed", { cause: failure });
  return { ops: count, seconds, samples };
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

export interface Summary {
  ops: number;
  seconds: number;
  opsPerSecond: number;
  p50: number;
  p99: number;
  max: number;
  /** Server CPU time per operation in µs, when measured. */
  serverCpuUsPerOp?: number;
}

export function summarize(result: RunResult): Summary {
  const sorted = Float64Array.from(result.samples).sort();
  return {
    ops: result.ops,
    seconds: result.seconds,
    opsPerSecond: result.ops / result.seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
  };
}

/** The median of independent measurements (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Each metric is the median of that metric over the repetitions (reps are independent runs). */
export function medianOf(reps: readonly Summary[]): Summary {
  return {
    ops: median(reps.map((r) => r.ops)),
    seconds: median(reps.map((r) => r.seconds)),
    opsPerSecond: median(reps.map((r) => r.opsPerSecond)),
    p50: median(reps.map((r) => r.p50)),
    p99: median(reps.map((r) => r.p99)),
    max: median(reps.map((r) => r.max)),
  };
}

export interface TableRow {
  label: string;
  summary: Summary;
  /** Shown in the ratio column, e.g. "0.42x" against the scenario's first row. */
  ratio?: string;
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "-";
}

/** A Markdown table: one row per client/variant of a scenario. */
export function renderTable(title: string, rows: readonly TableRow[], notes: readonly string[] = []): string {
  const header = [
    "client",
    "ops",
    "seconds",
    "ops/s",
    "p50 ms",
    "p99 ms",
    "max ms",
    "srv CPU µs/op",
    "ratio",
  ];
  const body = rows.map((row) => [
    row.label,
    String(row.summary.ops),
    fixed(row.summary.seconds, 2),
    fixed(row.summary.opsPerSecond, 0),
    fixed(row.summary.p50, 2),
    fixed(row.summary.p99, 2),
    fixed(row.summary.max, 2),
    fixed(row.summary.serverCpuUsPerOp ?? Number.NaN, 0),
    row.ratio ?? "",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    "| " + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ") + " |";
  const rule =
    "|" + widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|") + "|";
  return [`### ${title}`, "", line(header), rule, ...body.map(line), ...notes.map((n) => `\n${n}`), ""].join(
    "\n",
  );
}

/** "2.31x": how many times `value` is `base`. */
export function ratio(value: number, base: number): string {
  return `${(value / base).toFixed(2)}x`;
}
