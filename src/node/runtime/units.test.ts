// The runtime's pure parts, unprivileged: the crash-loop back-off's numbers, the CRI log format
// (written and read back), $(VAR) expansion, the atomic writer's layout and swap, getPhase.

import assert from "node:assert/strict";
import { lstat, mkdir, readFile, readdir, readlink, rm } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import type { Pod } from "../../api/index.ts";
import { tempDir } from "../../../test/harness/cleanup.ts";
import { writeAtomic } from "./atomic-writer.ts";
import { CrashLoopBackoff, goDuration } from "./backoff.ts";
import { CriLogWriter, LogFormatter, MAX_LOG_LINE, readLogFile, rfc3339Nano } from "./cri-log.ts";
import { expand } from "./env.ts";
import { podPhase, type ContainerView } from "./status.ts";

test("crash-loop back-off: restart at once, then 10s doubling to 5m; reset after 10 minutes", () => {
  const backoff = new CrashLoopBackoff();
  let now = 0;
  const waits: number[] = [];
  for (let i = 0; i < 8; i++) {
    const finished = now;
    const wait = backoff.remaining("p/c", finished, now);
    waits.push(wait);
    now += wait;
    backoff.next("p/c", finished, now);
  }
  assert.deepEqual(waits, [0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  // A container that then ran more than 10 minutes starts over.
  now += 600_001;
  assert.equal(backoff.remaining("p/c", now, now), 0);
  backoff.next("p/c", now, now);
  assert.equal(backoff.current("p/c"), 10_000);
  assert.deepEqual([goDuration(10_000), goDuration(160_000), goDuration(300_000)], ["10s", "2m40s", "5m0s"]);
});

test("CRI log: lines with RFC3339Nano stamps, long lines split into P parts, read back joined", async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, "0.log");
  let clock = Date.UTC(2026, 0, 2, 3, 4, 5, 600);
  const log = new CriLogWriter(path, () => clock);
  log.write("stdout", Buffer.from("one\ntw"));
  log.write("stderr", Buffer.from("err\n"));
  clock += 1000;
  log.write("stdout", Buffer.from("o\n" + "x".repeat(MAX_LOG_LINE + 10) + "\nlast"));
  log.close();
  const raw = (await readFile(path, "utf8")).trimEnd().split("\n");
  assert.equal(raw.length, 6);
  assert.equal(raw[0], "2026-01-02T03:04:05.6Z stdout F one");
  assert.match(raw[1]!, /^2026-01-02T03:04:05\.600000001Z stderr F err$/);
  assert.match(raw[2]!, / stdout F two$/);
  assert.match(raw[3]!, / stdout P x{16384}$/);
  assert.match(raw[4]!, / stdout F x{10}$/);
  assert.match(raw[5]!, / stdout F last$/);
  assert.equal(rfc3339Nano(Date.UTC(2026, 0, 1)), "2026-01-01T00:00:00Z");

  const read = async (options: ConstructorParameters<typeof LogFormatter>[0], tail?: number) => {
    const formatter = new LogFormatter(options);
    let lines = formatter.lines((await readLogFile(path)).lines);
    if (tail !== undefined) lines = lines.slice(-tail);
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on("data", (c: Buffer) => chunks.push(c));
    await formatter.send(lines, out);
    return Buffer.concat(chunks).toString("utf8");
  };
  assert.equal(await read({}), `one\nerr\ntwo\n${"x".repeat(MAX_LOG_LINE + 10)}\nlast\n`);
  assert.equal(await read({}, 1), "last\n");
  assert.equal(await read({ timestamps: true }, 1), `${raw[5]!.split(" ")[0]} last\n`);
  assert.equal(await read({ limitBytes: 6 }), "one\ner");
  assert.equal(await read({ sinceMs: clock }), `two\n${"x".repeat(MAX_LOG_LINE + 10)}\nlast\n`);
});

test("$(VAR) expansion as the kubelet's: defined names replaced, $$ escapes, unknown kept", () => {
  const env = new Map([
    ["A", "1"],
    ["B", "two"],
  ]);
  const lookup = (name: string) => env.get(name);
  assert.equal(expand("$(A)-$(B)", lookup), "1-two");
  assert.equal(expand("$$(A)", lookup), "$(A)");
  assert.equal(expand("$(C) $A", lookup), "$(C) $A");
  assert.equal(expand("open $(A", lookup), "open $(A");
});

test("atomic writer: ..data → timestamped dir, names link into ..data; an update swaps it and drops stale names", async (t) => {
  const dir = await tempDir(t);
  const file = (text: string, mode = 0o644) => ({ data: Buffer.from(text), mode });
  await writeAtomic(
    dir,
    new Map([
      ["a", file("1")],
      ["sub/b", file("2", 0o400)],
    ]),
    Date.UTC(2026, 0, 2, 3, 4, 5),
  );
  const first = await readlink(join(dir, "..data"));
  assert.match(first, /^\.\.2026_01_02_03_04_05\.\d+$/);
  assert.equal(await readlink(join(dir, "a")), "..data/a");
  assert.equal(await readlink(join(dir, "sub")), "..data/sub");
  assert.equal(await readFile(join(dir, "sub/b"), "utf8"), "2");
  assert.equal((await lstat(join(dir, first, "sub/b"))).mode & 0o777, 0o400);
  await writeAtomic(dir, new Map([["a", file("3")]]), Date.UTC(2026, 0, 2, 3, 4, 6));
  const second = await readlink(join(dir, "..data"));
  assert.notEqual(second, first);
  assert.equal(await readFile(join(dir, "a"), "utf8"), "3");
  assert.deepEqual((await readdir(dir)).sort(), ["..data", second, "a"].sort());
  await assert.rejects(writeAtomic(dir, new Map([["../escape", file("x")]]), 0), /invalid path/);
});

test("atomic writer: an unchanged payload is not rewritten; a mode or byte change is; crash leftovers go", async (t) => {
  const dir = await tempDir(t);
  const file = (text: string, mode = 0o644) => ({ data: Buffer.from(text), mode });
  const payload = new Map([
    ["a", file("1")],
    ["sub/b", file("2")],
  ]);
  assert.equal(await writeAtomic(dir, payload, Date.UTC(2026, 0, 2, 3, 4, 5)), true);
  const first = await readlink(join(dir, "..data"));
  assert.equal(await writeAtomic(dir, new Map(payload), Date.UTC(2026, 0, 2, 3, 4, 6)), false);
  assert.equal(await readlink(join(dir, "..data")), first);
  // A crash between writing a timestamped dir and the swap, and one before the links were made.
  await mkdir(join(dir, "..2026_01_01_00_00_00.1"));
  await rm(join(dir, "a"));
  assert.equal(await writeAtomic(dir, new Map(payload), Date.UTC(2026, 0, 2, 3, 4, 7)), false);
  assert.deepEqual((await readdir(dir)).sort(), ["..data", first, "a", "sub"].sort());
  assert.equal(await readFile(join(dir, "a"), "utf8"), "1");
  assert.equal(await writeAtomic(dir, new Map([...payload, ["a", file("1", 0o600)]]), 0), true);
  assert.notEqual(await readlink(join(dir, "..data")), first);
  const second = await readlink(join(dir, "..data"));
  assert.equal(await writeAtomic(dir, new Map([...payload, ["a", file("9", 0o600)]]), 0), true);
  assert.notEqual(await readlink(join(dir, "..data")), second);
  assert.equal(await readFile(join(dir, "a"), "utf8"), "9");
});

test("pod phase as the kubelet's getPhase", () => {
  const pod = (restartPolicy: "Always" | "OnFailure" | "Never"): Pod => ({
    metadata: {},
    spec: { restartPolicy, containers: [] },
  });
  const view = (state: ContainerView["state"], last?: number): ContainerView => ({
    name: "c",
    image: "",
    restartCount: 0,
    containerID: "",
    state,
    ...(last !== undefined
      ? {
          lastTerminated: {
            kind: "terminated",
            exitCode: last,
            reason: "Error",
            finishedAt: 0,
            containerID: "",
          },
        }
      : {}),
  });
  const done = (code: number): ContainerView =>
    view({
      kind: "terminated",
      exitCode: code,
      reason: code ? "Error" : "Completed",
      finishedAt: 0,
      containerID: "",
    });
  const running = view({ kind: "running", startedAt: 0 });
  const waiting = view({ kind: "waiting", reason: "PodInitializing" });
  const backingOff = view({ kind: "waiting", reason: "CrashLoopBackOff" }, 1);
  assert.equal(podPhase(pod("Always"), [], [running]), "Running");
  assert.equal(podPhase(pod("Always"), [], [waiting]), "Pending");
  assert.equal(podPhase(pod("Always"), [], [backingOff]), "Running");
  assert.equal(podPhase(pod("Always"), [], [done(0)]), "Running");
  assert.equal(podPhase(pod("Never"), [], [done(0), done(0)]), "Succeeded");
  assert.equal(podPhase(pod("Never"), [], [done(0), done(1)]), "Failed");
  assert.equal(podPhase(pod("OnFailure"), [], [done(1)]), "Running");
  assert.equal(podPhase(pod("OnFailure"), [], [done(0)]), "Succeeded");
  assert.equal(podPhase(pod("Never"), [running], [waiting]), "Pending");
  assert.equal(podPhase(pod("Never"), [done(2)], [waiting]), "Failed");
  assert.equal(podPhase(pod("OnFailure"), [done(2)], [waiting]), "Pending");
});
