// The generated docs cannot drift (CONVENTIONS.md §17): docs/cli.md and docs/contract.md are
// rendered again in memory (the CLI run for real) and must equal the committed files; the
// contract tables are also checked key by key both ways, so a failure names the missing key.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ANNOTATIONS, EVENT_REASONS, FINALIZERS, LABELS } from "../api/index.ts";
import { COMMON_SIDECAR_FLAGS } from "../kube/index.ts";
import { GENERATED_DOCS, ROOT, renderContractDoc } from "../../scripts/gen-docs.ts";

const HINT = "is out of date: run `npm run docs` and commit the result";

function firstLineDiff(have: string, want: string): string {
  const a = have.split("\n");
  const b = want.split("\n");
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i])
      return `first difference at line ${i + 1}:\n  file:      ${a[i]}\n  generated: ${b[i]}`;
  }
  return "";
}

for (const doc of GENERATED_DOCS) {
  test(`${doc.path} matches what scripts/gen-docs.ts generates`, async () => {
    const want = await doc.render();
    const have = await readFile(join(ROOT, doc.path), "utf8").catch(() => "(missing)");
    assert.ok(have === want, `${doc.path} ${HINT}\n${firstLineDiff(have, want)}`);
  });
}

/** The backticked first cell of every table row under `## title`. */
function tableKeys(markdown: string, title: string): string[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith(`${title}\n`));
  assert.ok(section, `docs/contract.md has no "## ${title}" section`);
  const keys: string[] = [];
  for (const match of section.matchAll(/^\| `([^`]+)` \|/gm)) keys.push(match[1]!);
  return keys;
}

test("docs/contract.md lists exactly the keys of the code tables, both ways", async () => {
  const doc = await readFile(join(ROOT, "docs", "contract.md"), "utf8");
  const tables = {
    Annotations: Object.values(ANNOTATIONS).map((e) => e.key),
    Finalizers: Object.values(FINALIZERS).map((e) => e.key),
    Labels: Object.values(LABELS).map((e) => e.key),
    "Event reasons": Object.values(EVENT_REASONS).map((e) => e.key),
    "Common sidecar flags": Object.keys(COMMON_SIDECAR_FLAGS).map((name) => `--${name}`),
  };
  for (const [title, codeKeys] of Object.entries(tables)) {
    const docKeys = tableKeys(doc, title);
    for (const key of codeKeys)
      assert.ok(docKeys.includes(key), `${key} is in the code but not in docs (${title})`);
    for (const key of docKeys)
      assert.ok(codeKeys.includes(key), `${key} is in docs (${title}) but not in the code`);
  }
});

test("docs/contract.md carries the FACTS.md strings", async () => {
  const doc = await renderContractDoc();
  for (const fact of [
    "external-attacher/",
    "kubernetes.io/pvc-protection",
    "volume.kubernetes.io/selected-node",
    "csi_sidecar_operations_seconds",
    "0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600",
  ]) {
    assert.ok(doc.includes(fact), `docs/contract.md lacks ${fact}`);
  }
});
