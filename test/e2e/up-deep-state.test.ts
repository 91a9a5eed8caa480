// `up` on a state dir too deep for Unix socket paths (107 bytes): instead of refusing, it puts
// the sockets in a short private dir named after the state dir, records it there, runs the whole
// lifecycle through them (the registrar registers with the node agent through the kubelet dir's
// plugins_registry link) and removes the dir on teardown. Bounded waits; the temp dir and the
// cluster go away even when the case fails.

import assert from "node:assert/strict";
import { lstat, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { exitWithin, SKIP, START_MS, startUp, stopUp, type UpProcess } from "../harness/up.ts";

test(
  "a state dir too deep for socket paths: sockets in a short 0700 dir, walkthrough passes, dir gone after",
  { skip: SKIP },
  async (t) => {
    const base = await mkdtemp(join(tmpdir(), "csikit-deep-"));
    const stateDir = join(base, "a-rather-long-directory-name-".repeat(3), "and-deeper-still", "state");
    assert.ok(
      Buffer.byteLength(
        join(stateDir, "nodes/node-1/plugins_registry/hostpath.csi.k8s.io-reg.sock.tmp-xxxxxx"),
      ) > 107,
    );
    const up: UpProcess = startUp(stateDir, ["--nodes=1", "--walkthrough", "--exit"]);
    t.after(async () => {
      await stopUp(up, stateDir);
      await rm(base, { recursive: true, force: true });
    });
    const code = await exitWithin(up, START_MS);
    const output = up.output();
    assert.equal(code, 0, output);
    assert.match(output, /walkthrough done/, output);
    const socketRoot = (await readFile(join(stateDir, "socket-dir"), "utf8")).trim();
    assert.ok(output.includes(`sockets in ${socketRoot}`), output);
    assert.ok(Buffer.byteLength(socketRoot) < 40, socketRoot);
    const link = await lstat(join(stateDir, "nodes", "node-1", "plugins_registry"));
    assert.ok(link.isSymbolicLink());
    await assert.rejects(lstat(socketRoot), { code: "ENOENT" }, "removed on teardown");
  },
);
