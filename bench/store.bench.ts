// `npm run bench:store`: the hostpath state store (journal-store.ts) against node:sqlite with
// the API server's kind of group commit (one transaction per event-loop turn, WAL,
// synchronous=FULL), on the same workload: 10,000 creates of two changes each (intent, then
// ready), 32 in flight; rate per 2,000 and CPU per create. Run it on a real disk dir (argument;
// default the OS temp dir). The figures chose the journal (see src/drivers/hostpath/README.md).
// Nothing here asserts.

import { DatabaseSync } from "node:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { JournalStore } from "../src/drivers/hostpath/journal-store.ts";
import { tmpdir } from "node:os";
const N = 10_000,
  IN_FLIGHT = 32;
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
async function run(label: string, put: (i: number, phase: string) => Promise<void>): Promise<void> {
  let next = 0;
  const slices: number[] = [];
  let done = 0;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < N) {
        const i = next++;
        await put(i, "creating");
        await new Promise((r) => setImmediate(r));
        await put(i, "ready");
        if (++done % 2000 === 0) slices.push(performance.now());
      }
    }),
  );
  const c = process.cpuUsage(c0);
  const ms = performance.now() - t0;
  const rates = slices.map((e, k) => (2000 / ((e - (k ? slices[k - 1]! : t0)) / 1000)).toFixed(0));
  console.log(
    `${label}: ${(N / (ms / 1000)).toFixed(0)} creates/s, per 2000: ${rates.join(" ")}; CPU ${((c.user + c.system) / 1000 / N).toFixed(3)} ms/create`,
  );
}
const base = process.argv[2] ?? tmpdir();
{
  const dir = mkdtempSync(join(base, "cmp-j-"));
  const store = new JournalStore<{ version: 2; volumes: Record<string, unknown> }>({
    file: join(dir, "c.json"),
    version: 2,
    empty: () => ({ version: 2, volumes: {} }),
    validate: () => ({ version: 2, volumes: {} }),
    collections: ["volumes"],
  });
  await store.load();
  await run("journal", (i, phase) =>
    store.update((d) => {
      d.volumes[`vol-${i}`] = record(i, phase);
    }),
  );
  console.log("  batches:", store.commits);
  await store.close();
  rmSync(dir, { recursive: true });
}
{
  const dir = mkdtempSync(join(base, "cmp-s-"));
  const db = new DatabaseSync(join(dir, "c.db"));
  db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE r (id TEXT PRIMARY KEY, v TEXT)");
  const ins = db.prepare("INSERT OR REPLACE INTO r (id, v) VALUES (?, ?)");
  let open = false;
  let waiters: Array<() => void> = [];
  let commits = 0;
  const put = (i: number, phase: string): Promise<void> => {
    if (!open) {
      db.exec("BEGIN IMMEDIATE");
      open = true;
      setImmediate(() => {
        db.exec("COMMIT");
        commits++;
        open = false;
        const w = waiters;
        waiters = [];
        for (const f of w) f();
      });
    }
    ins.run(`vol-${i}`, JSON.stringify(record(i, phase)));
    return new Promise((r) => waiters.push(r));
  };
  await run("sqlite (group commit at setImmediate, WAL, synchronous=FULL)", put);
  console.log("  batches:", commits);
  db.close();
  rmSync(dir, { recursive: true });
}
