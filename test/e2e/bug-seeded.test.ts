// csikit e2e catches a seeded bug and only where it should: on a driver whose NodePublishVolume
// answers OK without binding the volume, the data tests fail and the exec test (which writes and
// runs a file in one pod, checking only that the volume is not noexec) passes. The other rows of
// the table (block-as-fs, expand-lies, snapshot-empty) run in `npm run e2e:bugs`.

import assert from "node:assert/strict";
import { test } from "node:test";
import { sandboxUnavailable } from "../../src/node/index.ts";
import { SKIP } from "../harness/up.ts";
import { BUG_TABLE, runRow } from "../harness/bug-table.ts";

const RUN_MS = 600_000;
const noSandbox = SKIP === false ? await sandboxUnavailable() : undefined;

test(
  "csikit e2e on a driver that does not bind published volumes: data tests fail, the exec control passes",
  {
    skip: SKIP || (noSandbox !== undefined ? `pods run no commands here: ${noSandbox}` : false),
    timeout: RUN_MS + 180_000,
  },
  async (t) => {
    const row = BUG_TABLE.find((r) => r.bug === "publish-no-bind")!;
    const abort = new AbortController();
    t.after(() => abort.abort());
    const result = await runRow(row, { timeoutMs: RUN_MS, signal: abort.signal });
    for (const ref of row.caughtBy)
      assert.equal(result.outcomes.get(ref), "failed", `${ref.test}\n${result.output}`);
    for (const ref of row.controls)
      assert.equal(result.outcomes.get(ref), "passed", `${ref.test}\n${result.output}`);
    assert.match(result.output, /No such file or directory|read ""/, "the data is not on the volume");
  },
);
