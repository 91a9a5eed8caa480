// The runner without a cluster: which tests --focus/--skip select by their upstream full name,
// capability skips naming what is missing, a failing or throwing cleanup failing its test, the
// JUnit report's shape (parsed back), the closing matrix, and the test-driver file's fields.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "yaml";
import {
  DYNAMIC_PV_DEFAULT_FS,
  SUITES,
  hostpathDriver,
  junitXml,
  matrixRows,
  parseTestDriver,
  planTests,
  renderMatrix,
  requireCapability,
  resultLine,
  runTests,
  type E2eDriver,
  type Suite,
  type TestResult,
} from "./index.ts";

const driver: E2eDriver = { ...hostpathDriver("x.csi.example.com"), capabilities: { persistence: true } };
const PREFIX = "External Storage [Driver: x.csi.example.com] [Testpattern: Dynamic PV (default fs)]";

test("planTests: full upstream names; --focus and --skip are regexes on them", () => {
  const all = planTests(SUITES, driver).map((p) => p.fullName);
  assert.deepEqual(all, [
    `${PREFIX} provisioning should provision storage with defaults`,
    `${PREFIX} provisioning should provision storage with mount options`,
    `${PREFIX} volumes should store data`,
    `${PREFIX} volumes should allow exec of files on the volume`,
  ]);
  assert.equal(planTests(SUITES, driver, { focus: /volumes/ }).length, 2);
  assert.deepEqual(
    planTests(SUITES, driver, { focus: /provisioning|volumes/, skip: /exec|mount options/ }).map(
      (p) => p.test.name,
    ),
    ["should provision storage with defaults", "should store data"],
  );
  assert.equal(planTests(SUITES, driver, { focus: /\[Driver: other\]/ }).length, 0);
});

/** A suite whose tests pass, fail, throw in cleanup or need a capability, recording what ran. */
function fakeSuite(ran: string[]): Suite<string> {
  return {
    name: "demo",
    patterns: [DYNAMIC_PV_DEFAULT_FS],
    tests: [
      { name: "passes", run: async () => void ran.push("passes") },
      {
        name: "fails",
        run: async () => {
          ran.push("fails");
          throw new Error("boom <&>");
        },
      },
      {
        name: "needs exec",
        skipReason: requireCapability("exec"),
        run: async () => void ran.push("needs exec"),
      },
      { name: "leaks", run: async () => void ran.push("leaks") },
    ],
  };
}

async function runFake(): Promise<{
  results: TestResult[];
  ran: string[];
  lines: string[];
  cleaned: string[];
}> {
  const ran: string[] = [];
  const lines: string[] = [];
  const cleaned: string[] = [];
  const planned = planTests([fakeSuite(ran)], driver);
  const results = await runTests(planned, {
    driver,
    parallel: 2,
    onResult: (r) => lines.push(resultLine(r)),
    prepare: async (p) => ({
      context: p.test.name,
      cleanup: async () => {
        cleaned.push(p.test.name);
        if (p.test.name === "leaks") throw new Error("namespace still there");
      },
    }),
  });
  return { results, ran, lines, cleaned };
}

test("runTests: outcomes, capability skip reason, cleanup always and its failure fails the test", async () => {
  const { results, ran, lines, cleaned } = await runFake();
  assert.deepEqual(
    results.map((r) => [r.test, r.outcome, r.message]),
    [
      ["passes", "passed", undefined],
      ["fails", "failed", "boom <&>"],
      ["needs exec", "skipped", "Driver x.csi.example.com does not support capability exec"],
      ["leaks", "failed", "cleanup: namespace still there"],
    ],
  );
  assert.deepEqual(ran.sort(), ["fails", "leaks", "passes"]);
  assert.deepEqual(
    cleaned.sort(),
    ["fails", "leaks", "passes"],
    "a skipped test prepares nothing; the others clean up",
  );
  assert.equal(lines.length, 4);
  assert.match(
    lines.find((l) => l.includes("needs exec"))!,
    /^- +0\.0s .* demo needs exec — skipped: .*capability exec$/,
  );
});

test("matrix: counts per suite × pattern with a total", async () => {
  const { results } = await runFake();
  assert.deepEqual(matrixRows(results), [
    { suite: "demo", pattern: "Dynamic PV (default fs)", passed: 1, failed: 2, skipped: 1 },
  ]);
  const text = renderMatrix(results).split("\n");
  assert.match(text[0]!, /^SUITE +TEST PATTERN +PASSED +FAILED +SKIPPED$/);
  assert.match(text[1]!, /^demo +Dynamic PV \(default fs\) +1 +2 +1$/);
  assert.match(text[2]!, /^total +1 +2 +1$/);
});

test("junit: testsuite counts, testcase per result, skipped and failure children, escaped", async () => {
  const { results } = await runFake();
  const xml = junitXml(results);
  assert.match(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /);
  assert.match(
    xml,
    /<testsuite name="Kubernetes e2e suite" tests="4" disabled="0" errors="0" failures="2" skipped="1" /,
  );
  const cases = xml.match(/<testcase [^>]*>/g) ?? [];
  assert.equal(cases.length, 4);
  assert.match(cases[0], new RegExp(`name="${PREFIX.replace(/[[\]()]/g, "\\$&")} demo passes"`));
  assert.match(xml, /<failure message="boom &lt;&amp;&gt;" type="failed">boom &lt;&amp;&gt;<\/failure>/);
  assert.match(
    xml,
    /<skipped message="Driver x\.csi\.example\.com does not support capability exec"><\/skipped>/,
  );
  // Well-formed enough for a YAML-free check: every opened element is closed, in order.
  const tags = [...xml.matchAll(/<(\/?)(testsuites|testsuite|testcase|failure|skipped)\b/g)];
  const stack: string[] = [];
  for (const [, close, name] of tags)
    if (close) assert.equal(stack.pop(), name);
    else stack.push(name!);
  assert.deepEqual(stack, []);
});

test("parseTestDriver: upstream's fields; bad input names what is wrong", () => {
  const text = [
    "StorageClass:",
    "  FromExistingClassName: fast",
    "DriverInfo:",
    "  Name: x.csi.example.com",
    "  SupportedSizeRange:",
    "    Min: 1Gi",
    "  SupportedMountOption:",
    "    dirsync: {}",
    "    noatime: {}",
    "  Capabilities:",
    "    persistence: true",
    "    exec: false",
  ].join("\n");
  assert.deepEqual(parse(text).DriverInfo.Name, "x.csi.example.com");
  assert.deepEqual(parseTestDriver(text, "d.yaml"), {
    name: "x.csi.example.com",
    capabilities: { persistence: true, exec: false },
    supportedMountOptions: ["dirsync", "noatime"],
    claimSize: "1Gi",
    existingClassName: "fast",
  });
  assert.throws(() => parseTestDriver("DriverInfo: {}", "d.yaml"), /d\.yaml: DriverInfo\.Name is missing/);
  assert.throws(
    () => parseTestDriver("DriverInfo: {Name: a, Capabilities: {exec: yes-please}}", "d.yaml"),
    /DriverInfo\.Capabilities\.exec is not true or false/,
  );
  assert.throws(() => parseTestDriver("[", "d.yaml"), /d\.yaml: not YAML/);
});
