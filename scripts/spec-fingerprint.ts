// Writes src/csi/proto/spec-descriptors.json: the fingerprint (src/csi/proto-fingerprint.ts) of
// the proto in the CSI spec text, so protos.test.ts can check our csi.proto without the spec.
//
//   node scripts/spec-fingerprint.ts [--spec PATH] [--check]
//
// --spec defaults to shared/reference/csi-spec-v1.12.0.md beside the repository, then
// /work/shared/reference/. --check regenerates in memory and fails when the committed file
// differs. The output is Prettier-formatted so `prettier --check .` accepts it as written.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import * as prettier from "prettier";
import {
  FINGERPRINT_PATH,
  SPEC_CANDIDATES,
  SPEC_VERSION,
  fingerprint,
  parseSpecRoot,
} from "../src/csi/proto-fingerprint.ts";
import { parseProgramFlags } from "../src/cli/command.ts";

const ROOT = resolve(import.meta.dirname, "..");

async function main(): Promise<void> {
  const flags = parseProgramFlags(
    "spec-fingerprint",
    "node scripts/spec-fingerprint.ts [--spec PATH] [--check]",
    {
      spec: {
        type: "string",
        default: "",
        help: `The CSI spec text (default: ${SPEC_CANDIDATES.join(" or ")}).`,
      },
      check: {
        type: "bool",
        default: "false",
        help: "Fail when the committed fingerprint differs instead of writing it.",
      },
    },
    "Writes src/csi/proto/spec-descriptors.json, the fingerprint of the proto in the CSI spec text.",
  );
  const spec = flags.string("spec") || SPEC_CANDIDATES.find((path) => existsSync(path));
  if (spec === undefined) {
    throw new Error(`spec-fingerprint: no spec text at ${SPEC_CANDIDATES.join(" or ")}; pass --spec PATH`);
  }
  const file = {
    generatedBy: `scripts/spec-fingerprint.ts from csi-spec-v${SPEC_VERSION}.md; do not edit`,
    ...fingerprint(parseSpecRoot(readFileSync(spec, "utf8")), "csi.v1"),
  };
  const options = (await prettier.resolveConfig(FINGERPRINT_PATH)) ?? {};
  const text = await prettier.format(JSON.stringify(file, null, 2), { ...options, parser: "json" });
  const target = relative(ROOT, FINGERPRINT_PATH);
  if (!flags.bool("check")) {
    writeFileSync(FINGERPRINT_PATH, text);
    console.log(`spec-fingerprint: wrote ${target} from ${spec}`);
    return;
  }
  const current = existsSync(FINGERPRINT_PATH) ? readFileSync(FINGERPRINT_PATH, "utf8") : undefined;
  if (current !== text) {
    console.error(
      `spec-fingerprint --check: ${target} differs from ${spec}; run node scripts/spec-fingerprint.ts`,
    );
    process.exit(1);
  }
  console.log(`spec-fingerprint --check: ${target} matches ${spec}`);
}

await main();
