// The manifest corpus, applied by the machine's kubectl with `--validate=strict` (server-side
// strict field validation) to a real API server: every file under testdata/valid is an ordinary
// object kube-apiserver accepts (modelled on the Kubernetes documentation's examples for each
// served kind) and must be accepted; every file under testdata/invalid is refused by
// kube-apiserver, and its `# refused:` header lines are the texts kube-apiserver's answer holds
// (field path and message, as upstream's validation writes them), each of which must appear in
// kubectl's error for that file. Each folder is one `kubectl apply -f <folder>` (files in name
// order, so a valid file may use what an earlier one created: the namespace, the StorageClass);
// kubectl goes on past a refused file and names each file in its error.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing, type KubectlResult } from "../../../test/harness/kubectl.ts";

const skip = kubectlMissing();
const TESTDATA = join(import.meta.dirname, "testdata");

function corpus(folder: "valid" | "invalid"): string[] {
  return readdirSync(join(TESTDATA, folder))
    .filter((name) => name.endsWith(".yaml"))
    .sort();
}

/** The `# refused: <text>` header lines of an invalid manifest. */
function refusals(file: string): string[] {
  const texts: string[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const match = /^# refused: (.+)$/.exec(line);
    if (match?.[1] !== undefined) texts.push(match[1]);
  }
  return texts;
}

/** kubectl's stderr cut into one error per file it names (`error when creating "<file>"`). */
function errorsByFile(stderr: string, files: readonly string[]): Map<string, string> {
  const chunks = stderr.split(/^(?=Error from server|error: )/m);
  const byFile = new Map<string, string>();
  for (const file of files) {
    byFile.set(file, chunks.filter((chunk) => chunk.includes(`"${file}"`)).join("\n"));
  }
  return byFile;
}

describe("the manifest corpus against the API server with kubectl --validate=strict", { skip }, () => {
  let server: TestServer;
  let valid: KubectlResult;
  let invalid: KubectlResult;
  const apply = (folder: string) =>
    kubectl(["apply", "--validate=strict", "-f", join(TESTDATA, folder)], {
      kubeconfig: server.handle.kubeconfigPath,
      timeoutMs: 240_000,
    });
  before(async () => {
    server = await startTestServer();
    // The invalid corpus names objects the valid one uses (game-settings) only as references.
    valid = await apply("valid");
    invalid = await apply("invalid");
  });
  after(async () => {
    await server.dispose();
  });

  describe("valid objects are accepted", () => {
    for (const name of corpus("valid")) {
      test(name, () => {
        const file = join(TESTDATA, "valid", name);
        assert.ok(!valid.stderr.includes(`"${file}"`), `kubectl apply refused ${name}: ${valid.stderr}`);
      });
    }
    test("kubectl reports one created object per file and no warnings", () => {
      assert.equal(valid.stderr, "");
      assert.equal(valid.code, 0);
      assert.equal(valid.stdout.match(/ created$/gm)?.length, corpus("valid").length, valid.stdout);
    });
  });

  describe("invalid objects are refused with kube-apiserver's message", () => {
    const files = corpus("invalid").map((name) => join(TESTDATA, "invalid", name));
    for (const file of files) {
      test(file.slice(TESTDATA.length + 1), () => {
        const expected = refusals(file);
        assert.ok(expected.length > 0, `${file} has no "# refused:" line`);
        const error = errorsByFile(invalid.stderr, files).get(file) ?? "";
        assert.notEqual(error, "", `kubectl apply accepted ${file}`);
        for (const text of expected) assert.ok(error.includes(text), `want ${text}\ngot ${error}`);
      });
    }
    test("nothing of the invalid corpus was created", () => {
      assert.notEqual(invalid.code, 0);
      assert.equal(invalid.stdout.match(/ created$/gm), null, invalid.stdout);
    });
  });
});
