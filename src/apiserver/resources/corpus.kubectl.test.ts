// The manifest corpus, applied by the machine's kubectl with `--validate=strict` (server-side
// strict field validation) to a real API server: every file under testdata/valid is an ordinary
// object kube-apiserver accepts (modelled on the Kubernetes documentation's examples for each
// served kind) and must be accepted; every file under testdata/invalid is refused by
// kube-apiserver, and its `# refused:` header lines are the texts kube-apiserver's answer holds
// (field path and message, as upstream's validation writes them), each of which must appear in
// kubectl's error. Valid files are applied in name order, so a file may use what an earlier one
// created (the namespace, the StorageClass).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";

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

describe("the manifest corpus against the API server with kubectl --validate=strict", { skip }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.dispose();
  });
  const apply = (file: string) =>
    kubectl(["apply", "--validate=strict", "-f", file], { kubeconfig: server.handle.kubeconfigPath });

  describe("valid objects are accepted", () => {
    for (const name of corpus("valid")) {
      test(name, async () => {
        const result = await apply(join(TESTDATA, "valid", name));
        assert.equal(result.code, 0, `kubectl apply refused ${name}: ${result.stderr}`);
        assert.match(result.stdout, / created$/m);
        assert.equal(result.stderr, "", `warnings for ${name}: ${result.stderr}`);
      });
    }
  });

  describe("invalid objects are refused with kube-apiserver's message", () => {
    for (const name of corpus("invalid")) {
      test(name, async () => {
        const file = join(TESTDATA, "invalid", name);
        const expected = refusals(file);
        assert.ok(expected.length > 0, `${name} has no "# refused:" line`);
        const result = await apply(file);
        assert.notEqual(result.code, 0, `kubectl apply accepted ${name}: ${result.stdout}`);
        for (const text of expected)
          assert.ok(result.stderr.includes(text), `want ${text}\ngot ${result.stderr}`);
      });
    }
  });
});
