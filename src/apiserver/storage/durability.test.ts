import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openSqliteStore } from "./index.ts";
import type { StoreEvent } from "./index.ts";

const STORM = join(import.meta.dirname, "testdata", "write-storm.ts");
/** Acknowledged writes to see before the kill: enough that the kill lands mid-storm. */
const ACKS_BEFORE_KILL = 400;

test(
  "every acknowledged write survives kill -9 mid-storm, and revisions go on increasing",
  { timeout: 120_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "csikit-store-durability-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "state.db");

    const child = spawn(process.execPath, [STORM, path], { stdio: ["ignore", "pipe", "pipe"] });
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
    let stdout = "";
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on("exit", (code, signal) => resolve(signal ?? code)),
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
        if (stdout.split("\n").length > ACKS_BEFORE_KILL) {
          child.kill("SIGKILL");
          resolve();
        }
      });
      child.on("exit", () => reject(new Error(`write storm exited before the kill: ${stderr}`)));
    });
    assert.equal(await exited, "SIGKILL");

    // Only complete lines are acknowledgements; a torn last line is not.
    const acks = stdout
      .split("\n")
      .filter((line) => /^\d+ \S+ \d+$/.test(line))
      .map((line) => {
        const [revision, key, sequence] = line.split(" ");
        return { revision: Number(revision), key: key!, sequence: Number(sequence) };
      });
    assert.ok(acks.length >= ACKS_BEFORE_KILL, `saw ${acks.length} acknowledgements`);

    const store = openSqliteStore({ path });
    t.after(() => store.close());
    const maxAcked = Math.max(...acks.map((a) => a.revision));
    assert.ok(
      store.currentRevision() >= maxAcked,
      `revision ${store.currentRevision()} < acknowledged ${maxAcked}`,
    );

    // The whole history is still there: every acknowledged revision with its key and content.
    const history = new Map<number, StoreEvent>();
    const watch = store.watch("/storm/", 0);
    for await (const event of watch) {
      history.set(event.revision, event);
      if (event.revision >= store.currentRevision()) break;
    }
    for (const ack of acks) {
      const event = history.get(ack.revision);
      assert.ok(event, `acknowledged revision ${ack.revision} is missing`);
      assert.equal(event.key, ack.key);
      assert.equal(event.type, ack.sequence % 2 === 0 ? "ADDED" : "MODIFIED");
      assert.deepEqual(event.object["data"], { sequence: String(ack.sequence) });
    }
    const before = store.currentRevision();
    const next = store.create("/after/restart", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "r" },
    });
    assert.equal(next.revision, before + 1);
    assert.ok(next.revision > maxAcked);
  },
);
