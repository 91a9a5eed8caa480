// The runner without a cluster: which tests --focus/--skip select by their upstream full name, a
// test the driver's definition rules out skipped with upstream's message, one without a body
// skipped as not implemented, a body's E2eSkip, a failing or throwing cleanup failing its test,
// [Serial]/[Disruptive] tests run alone after the others, the JUnit report's shape and the matrix.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  E2eSkip,
  junitXml,
  matrixRows,
  NOT_IMPLEMENTED,
  parseTestDriver,
  planTests,
  renderMatrix,
  resultLine,
  runsAlone,
  runTests,
  selectTests,
  type PlannedTest,
  type TestResult,
} from "./index.ts";

const DRIVER = parseTestDriver(
  [
    "StorageClass: {FromName: true}",
    "DriverInfo:",
    "  Name: x.csi.example.com",
    "  Capabilities: {persistence: true, exec: false}",
  ].join("\n"),
).definition;
const PREFIX = "External Storage [Driver: x.csi.example.com] [Testpattern: Dynamic PV (default fs)]";
const PLAN = planTests(DRIVER);

test("selectTests: --focus and --skip are regexes on upstream's full names", () => {
  const volumes = selectTests(PLAN, { focus: /\[Testpattern: Dynamic PV \(default fs\)\] volumes / });
  assert.deepEqual(
    volumes.map((p) => p.name),
    [`${PREFIX} volumes should store data`, `${PREFIX} volumes should allow exec of files on the volume`],
  );
  assert.equal(volumes[0]!.skip, null);
  assert.match(volumes[1]!.skip ?? "", /exec/, "exec: false in the definition");
  assert.deepEqual(
    selectTests(volumes, { skip: /exec/ }).map((p) => p.test.title),
    ["should store data"],
  );
  assert.equal(selectTests(PLAN, { focus: /\[Driver: other\]/ }).length, 0);
  assert.ok(PLAN.some(runsAlone), "some tests are [Serial] or [Disruptive]");
});

/** The Dynamic PV (default fs) test whose name (after the pattern) matches. */
const pick = (pattern: RegExp): PlannedTest => {
  const found = PLAN.find((p) => p.name.startsWith(PREFIX) && pattern.test(p.name));
  assert.ok(found, `no planned test matches ${pattern}`);
  return found;
};

async function runFake(): Promise<{
  results: TestResult[];
  ran: string[];
  lines: string[];
  cleaned: string[];
}> {
  const ran: string[] = [];
  const lines: string[] = [];
  const cleaned: string[] = [];
  const planned = [
    pick(/\] volumes should store data$/),
    pick(/\] volumes should allow exec/), // exec: false in the definition
    pick(
      /\[Testpattern: Dynamic PV \(default fs\)\] provisioning should provision storage with mount options/,
    ),
    pick(/\[Testpattern: Dynamic PV \(default fs\)\] volumeIO /),
    pick(/\[Testpattern: Dynamic PV \(default fs\)\] subPath should support non-existent path/),
    pick(/\[Testpattern: Dynamic PV \(default fs\)\] subPath should support existing directory$/),
  ];
  const bodies: Record<string, (context: string) => Promise<void>> = {
    "should store data": async () => void ran.push("store"),
    "should write files of various sizes, verify size, validate content": async () => {
      ran.push("io");
      throw new Error("boom <&>");
    },
    "should support non-existent path": async () => {
      ran.push("skips itself");
      throw new E2eSkip("needs 2 nodes, the cluster has 1");
    },
    "should support existing directory": async () => void ran.push("leaks"),
  };
  const results = await runTests<string>(planned, {
    parallel: 2,
    body: (p) => bodies[p.test.title],
    onResult: (r) => lines.push(resultLine(r)),
    prepare: async (p) => ({
      context: p.test.title,
      cleanup: async () => {
        cleaned.push(p.test.title);
        if (p.test.title === "should support existing directory") throw new Error("namespace still there");
      },
    }),
  });
  return { results, ran, lines, cleaned };
}

test("runTests: outcomes, upstream's skip message, not implemented, E2eSkip, cleanup always", async () => {
  const { results, ran, lines, cleaned } = await runFake();
  assert.deepEqual(
    results.map((r) => [r.suite, r.outcome, r.message]),
    [
      ["volumes", "passed", undefined],
      ["volumes", "skipped", results[1]!.message],
      ["provisioning", "skipped", results[2]!.message],
      ["volumeIO", "failed", "boom <&>"],
      ["subPath", "skipped", "needs 2 nodes, the cluster has 1"],
      ["subPath", "failed", "cleanup: namespace still there"],
    ],
  );
  assert.match(results[1]!.message!, /exec/, "exec: false: upstream's skip");
  assert.match(results[2]!.message!, /mount option/, "no SupportedMountOption: upstream's skip");
  assert.deepEqual(ran.sort(), ["io", "leaks", "skips itself", "store"]);
  assert.deepEqual(cleaned.length, 4, "a skipped-before-run test prepares nothing; the others clean up");
  assert.equal(lines.length, 6);
  assert.match(
    lines.find((l) => l.includes("allow exec"))!,
    /^- +0\.0s .* — skipped: .*exec/,
  );
});

test("runTests: a test with no body is skipped as not implemented", async () => {
  const results = await runTests<string>([pick(/\] volumes should store data$/)], {
    body: () => undefined,
    prepare: () => assert.fail("nothing to prepare"),
  });
  assert.deepEqual(
    results.map((r) => [r.outcome, r.message]),
    [["skipped", NOT_IMPLEMENTED]],
  );
});

test("runTests: [Serial] and [Disruptive] tests run alone, after the others", async () => {
  const alone = PLAN.filter(runsAlone).slice(0, 2);
  const together = PLAN.filter((p) => !runsAlone(p)).slice(0, 3);
  const planned = [alone[0]!, ...together, alone[1]!].map((p) => ({ ...p, skip: null }));
  let running = 0;
  const log: string[] = [];
  await runTests<PlannedTest>(planned, {
    parallel: 4,
    body: () => async (p) => {
      running++;
      log.push(`${runsAlone(p) ? "alone" : "together"}:${running}`);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
    },
    prepare: async (p) => ({ context: p, cleanup: async () => {} }),
  });
  assert.deepEqual(log.slice(3), ["alone:1", "alone:1"]);
  assert.ok(log.slice(0, 3).every((entry) => entry.startsWith("together")));
});

test("matrix: counts per suite × pattern with a total", async () => {
  const { results } = await runFake();
  assert.deepEqual(matrixRows(results).slice(0, 2), [
    { suite: "volumes", pattern: "Dynamic PV (default fs)", passed: 1, failed: 0, skipped: 1 },
    { suite: "provisioning", pattern: "Dynamic PV (default fs)", passed: 0, failed: 0, skipped: 1 },
  ]);
  const text = renderMatrix(results).split("\n");
  assert.match(text[0]!, /^SUITE +TEST PATTERN +PASSED +FAILED +SKIPPED$/);
  assert.match(text[1]!, /^volumes +Dynamic PV \(default fs\) +1 +0 +1$/);
  assert.ok(
    text.some((line) => /^total +1 +2 +3$/.test(line)),
    text.join("\n"),
  );
});

test("junit: testsuite counts, testcase per result, skipped and failure children, escaped", async () => {
  const { results } = await runFake();
  const xml = junitXml(results);
  assert.match(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /);
  assert.match(
    xml,
    /<testsuite name="Kubernetes e2e suite" tests="6" disabled="0" errors="0" failures="2" skipped="3" /,
  );
  const cases = xml.match(/<testcase [^>]*>/g) ?? [];
  assert.equal(cases.length, 6);
  assert.match(
    cases[0],
    new RegExp(`name="${PREFIX.replace(/[[\]()]/g, "\\$&")} volumes should store data"`),
  );
  assert.match(xml, /<failure message="boom &lt;&amp;&gt;" type="failed">boom &lt;&amp;&gt;<\/failure>/);
  const tags = [...xml.matchAll(/<(\/?)(testsuites|testsuite|testcase|failure|skipped)\b/g)];
  const stack: string[] = [];
  for (const [, close, name] of tags)
    if (close) assert.equal(stack.pop(), name);
    else stack.push(name!);
  assert.deepEqual(stack, []);
});
