// The children of `csikit up` stop when `up` is gone, however it ended: a real Supervisor in a
// process of its own (test/harness/supervisor-host.ts) starts a csikit component and a command
// that is not csikit's; the test kills that process with SIGKILL and every child — the shell
// watching the foreign command, and that command — is gone within a bound, with no `up` to
// restart them. pids.json is written atomically through an unpredictable temp name.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { memoryLogger, silentLogger } from "../base/index.ts";
import { namesCreatedDuring, UNPREDICTABLE_TEMP } from "../../test/harness/temp-names.ts";
import { until } from "../../test/harness/until.ts";
import { logTail, Supervisor } from "./supervisor.ts";

const HOST = fileURLToPath(new URL("../../test/harness/supervisor-host.ts", import.meta.url));
const MAIN = fileURLToPath(new URL("../cli/main.ts", import.meta.url));

/** Whether pid runs (a zombie does not: its parent, the killed host, is gone and init reaps it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // The state follows the command name in parentheses, which may itself hold spaces.
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

test("a SIGKILL of the supervisor stops its children: a csikit component and a foreign command", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sup-"));
  const started: number[] = [];
  t.after(async () => {
    for (const pid of started) if (alive(pid)) process.kill(pid, "SIGKILL");
    await rm(dir, { recursive: true, force: true });
  });
  let output = "";
  const host = spawn(process.execPath, [HOST, dir, MAIN], { stdio: ["ignore", "pipe", "inherit"] });
  host.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const hostExited = new Promise((resolve) => host.once("exit", resolve));
  t.after(() => host.kill("SIGKILL"));
  const ready = await until(async () => /READY (.*)\n/.exec(output)?.[1], "the supervisor host to start", {
    timeoutMs: 60_000,
  });
  const { driver, userDriver } = JSON.parse(ready) as { driver: number; userDriver: number };
  started.push(driver, userDriver);
  // The driver is up (its socket is there), and the foreign command runs under its shell.
  await until(
    async () => (await stat(join(dir, "csi.sock")).catch(() => undefined)) && true,
    "the driver's socket",
    {
      timeoutMs: 60_000,
    },
  );
  const sleeper = await until(
    async () => {
      const children = await readFile(`/proc/${userDriver}/task/${userDriver}/children`, "utf8").catch(
        () => "",
      );
      for (const pid of children
        .split(" ")
        .filter((p) => p !== "")
        .map(Number))
        if ((await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).startsWith("sleep\0"))
          return pid;
      return undefined;
    },
    "the foreign command under its shell",
    { timeoutMs: 30_000 },
  );
  started.push(sleeper);

  host.kill("SIGKILL");
  await hostExited;
  await until(
    async () => ([driver, userDriver, sleeper].some(alive) ? undefined : true),
    "every child of the killed supervisor to stop",
    { timeoutMs: 30_000 },
  );
  const log = await readFile(join(dir, "logs", "driver.log"), "utf8");
  assert.match(log, /supervisor gone/);
});

test("pids.json is written 0600 through an unpredictable temp name", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sup-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const supervisor = new Supervisor({ logger: silentLogger, pidsFile: join(dir, "pids.json") });
  t.after(() => supervisor.stopAll());
  const names = await namesCreatedDuring(dir, "pids.json", async () => {
    supervisor.start({ name: "sleeper", command: "sleep", args: ["600"], logFile: join(dir, "sleeper.log") });
  });
  const temps = names.filter((name) => name.startsWith(".pids.json"));
  assert.ok(temps.length > 0 && temps.every((name) => UNPREDICTABLE_TEMP.test(name)), names.join(" "));
  assert.equal((await stat(join(dir, "pids.json"))).mode & 0o777, 0o600);
  await supervisor.stopAll();
  assert.deepEqual(JSON.parse(await readFile(join(dir, "pids.json"), "utf8")), {});
});

test("a component that exits is restarted, and the warning carries the last lines of that run's log", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sup-"));
  const { logger, lines } = memoryLogger();
  const supervisor = new Supervisor({ logger, pidsFile: join(dir, "pids.json") });
  t.after(async () => {
    await supervisor.stopAll();
    await rm(dir, { recursive: true, force: true });
  });
  const logFile = join(dir, "crasher.log");
  await writeFile(logFile, "an earlier run's line\n");
  const crasher = supervisor.start({
    name: "crasher",
    command: "/bin/sh",
    args: [
      "-c",
      "echo starting; echo 'listen EADDRINUSE: address already in use 127.0.0.1:20001' >&2; exit 1",
    ],
    logFile,
  });
  const warning = await until(
    async () => lines.find((line) => line.includes("component exited; restarting")),
    "the restart warning",
    { timeoutMs: 30_000 },
  );
  assert.match(warning, /code=1/);
  assert.match(
    warning,
    /lastLines="starting\\nlisten EADDRINUSE: address already in use 127\.0\.0\.1:20001"/,
  );
  assert.doesNotMatch(warning, /an earlier run/, "only this run's lines");
  await until(async () => crasher.starts >= 2 || undefined, "a restart", { timeoutMs: 30_000 });
});

test("logTail keeps the last whole lines of a long run", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sup-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const logFile = join(dir, "long.log");
  const body = Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n") + "\n";
  await writeFile(logFile, body);
  const tail = logTail(logFile, 0);
  assert.ok(tail.endsWith("line 199"));
  assert.ok(tail.length <= 600);
  assert.match(tail, /^line \d+\n/, "starts at a whole line");
  assert.equal(logTail(join(dir, "missing.log"), 0), "");
});
