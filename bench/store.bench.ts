// `npm run bench:store`: the hostpath state store (journal-store.ts) against node:sqlite with
// the API server's kind of group commit (one transaction per event-loop turn, WAL,
// synchronous=FULL), on the same workload: 10,000 creates of two changes each (intent, then
// ready), 32 in flight; rate per 2,000 and CPU per create. Run it on a real disk (`--dir`;
// default the OS temp dir): on tmpfs an fsync costs nothing. The figures chose the journal (see
// src/drivers/hostpath/README.md). Nothing here asserts.

import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { JournalStore } from "../src/drivers/hostpath/journal-store.ts";
import { benchFlags } from "./cli.ts";
import { filesystemOf, machine } from "./where.ts";

const N = 10_000;
const IN_FLIGHT = 32;
const SLICE = 2_000;

const flags = benchFlags(
  "store",
  {
    dir: {
      type: "string",
      default: "",
      help: "Parent of the stores' temp dirs; put it on a real disk (default: the OS temp dir).",
    },
  },
  "The hostpath journal store against node:sqlite with group commit: 10,000 creates of two changes each, 32 in flight.",
);
// The parent dir was once the first argument; it still is when no --dir is given.
const base = flags.string("dir") || flags.parsed.positionals[0] || tmpdir();
if (!statSync(base, { throwIfNoEntry: false })?.isDirectory()) {
  process.stderr.write(`bench:store: --dir ${JSON.stringify(base)} is not a directory\n`);
  process.exit(2);
}

interface Result {
  store: string;
  perSecond: number;
  slices: number[];
  cpuMsPerCreate: number;
  batches: number;
}

const record = (i: number, phase: string) => ({
  id: `vol-${i}`,
  name: `pvc-${i}`,
  sizeBytes: 4096,
  accessType: "mount",
  kind: "",
  nodeId: "n",
  parameters: {},
  mutableParameters: {},
  accessModes: ["SINGLE_NODE_WRITER"],
  phase,
  published: {},
});

/** N creates, IN_FLIGHT at a time; each writes its record twice (intent, then ready). */
async function run(
  put: (i: number, phase: string) => Promise<void>,
): Promise<Omit<Result, "store" | "batches">> {
  let next = 0;
  let done = 0;
  const sliceEnds: number[] = [];
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < N) {
        const i = next++;
        await put(i, "creating");
        await new Promise((resolve) => setImmediate(resolve));
        await put(i, "ready");
        if (++done % SLICE === 0) sliceEnds.push(performance.now());
      }
    }),
  );
  const cpu = process.cpuUsage(c0);
  const ms = performance.now() - t0;
  return {
    perSecond: N / (ms / 1000),
    slices: sliceEnds.map((end, k) => SLICE / ((end - (k > 0 ? sliceEnds[k - 1]! : t0)) / 1000)),
    cpuMsPerCreate: (cpu.user + cpu.system) / 1000 / N,
  };
}

async function journal(dir: string): Promise<Result> {
  const store = new JournalStore<{ version: 2; volumes: Record<string, unknown> }>({
    file: join(dir, "c.json"),
    version: 2,
    empty: () => ({ version: 2, volumes: {} }),
    validate: () => ({ version: 2, volumes: {} }),
    collections: ["volumes"],
  });
  await store.load();
  try {
    const figures = await run((i, phase) =>
      store.update((draft) => {
        draft.volumes[`vol-${i}`] = record(i, phase);
      }),
    );
    return { store: "journal (journal-store.ts)", ...figures, batches: store.commits };
  } finally {
    await store.close();
  }
}

async function sqlite(dir: string): Promise<Result> {
  const db = new DatabaseSync(join(dir, "c.db"));
  try {
    db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE r (id TEXT PRIMARY KEY, v TEXT)");
    const insert = db.prepare("INSERT OR REPLACE INTO r (id, v) VALUES (?, ?)");
    let open = false;
    let waiters: Array<() => void> = [];
    let batches = 0;
    const put = (i: number, phase: string): Promise<void> => {
      if (!open) {
        db.exec("BEGIN IMMEDIATE");
        open = true;
        setImmediate(() => {
          db.exec("COMMIT");
          batches++;
          open = false;
          const woken = waiters;
          waiters = [];
          for (const wake of woken) wake();
        });
      }
      insert.run(`vol-${i}`, JSON.stringify(record(i, phase)));
      return new Promise((resolve) => waiters.push(resolve));
    };
    const figures = await run(put);
    return { store: "node:sqlite (commit per turn, WAL, synchronous=FULL)", ...figures, batches };
  } finally {
    db.close();
  }
}

const dir = mkdtempSync(join(base, "csikit-bench-store-"));
const results: Result[] = [];
try {
  for (const [name, bench] of [
    ["journal", journal],
    ["sqlite", sqlite],
  ] as const) {
    const own = join(dir, name);
    mkdirSync(own);
    results.push(await bench(own));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const group = (n: number): string => Math.round(n).toLocaleString("en-US");
console.log(
  `State stores, ${N.toLocaleString("en-US")} creates of two changes each, ${IN_FLIGHT} in flight (${machine()}; state dirs on ${filesystemOf(base)})\n`,
);
console.log(`| store | creates/s | per ${group(SLICE)} | CPU ms per create | batches |`);
console.log("|---|---:|---|---:|---:|");
for (const r of results)
  console.log(
    `| ${r.store} | ${group(r.perSecond)} | ${r.slices.map(group).join(" ")} | ${r.cpuMsPerCreate.toFixed(3)} | ${group(r.batches)} |`,
  );
