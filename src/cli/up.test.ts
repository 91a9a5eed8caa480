// `csikit up --walkthrough`: alone it runs the whole walkthrough (with the growth step), `=expand`
// the expansion one, `=false` none; anything else is a flag error naming the choices.

import assert from "node:assert/strict";
import { test } from "node:test";
import { FlagError, Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { upCommand, walkthroughOf } from "./up.ts";

const which = (argv: readonly string[]) =>
  walkthroughOf(new Flags(parseFlags({ ...LOGGING_FLAGS, ...upCommand.flags }, argv)).string("walkthrough"));

test("--walkthrough alone, =expand, =true, =false and absent", () => {
  assert.equal(which(["--walkthrough", "--exit"]), "all");
  assert.equal(which(["--walkthrough=expand"]), "expand");
  assert.equal(which(["--walkthrough=true"]), "all");
  assert.equal(which(["--walkthrough=false"]), undefined);
  assert.equal(which([]), undefined);
  assert.throws(
    () => which(["--walkthrough=grow"]),
    (error: unknown) => error instanceof FlagError && /-walkthrough: want all or expand/.test(error.message),
  );
});
