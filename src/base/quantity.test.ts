import { test } from "node:test";
import assert from "node:assert/strict";
import {
  canonicalQuantity,
  compareQuantities,
  parseByteQuantity,
  parseQuantity,
  quantityFromValue,
  quantityMilliValue,
  quantityValue,
  tryParseQuantity,
} from "./quantity.ts";

test("parses exact values in every suffix family", () => {
  const cases: [string, bigint][] = [
    ["1Gi", 1073741824n],
    ["100Mi", 104857600n],
    ["1.5G", 1500000000n],
    ["1.5Gi", 1610612736n],
    ["1Ki", 1024n],
    ["2Ei", 2n * 1024n ** 6n],
    ["1e3", 1000n],
    ["1E", 10n ** 18n],
    ["12345", 12345n],
    ["+5", 5n],
    ["-5k", -5000n],
    ["0", 0n],
  ];
  for (const [input, bytes] of cases) assert.equal(quantityValue(parseQuantity(input)), bytes, input);
  assert.equal(quantityMilliValue(parseQuantity("500m")), 500n);
  assert.equal(quantityMilliValue(parseQuantity(".5")), 500n);
  assert.equal(parseQuantity("1n").nanos, 1n);
  // sub-nano precision rounds up, as upstream
  assert.equal(parseQuantity("0.1n").nanos, 1n);
});

test("canonical format follows upstream", () => {
  const cases: [string, string][] = [
    ["1Gi", "1Gi"],
    ["1024Mi", "1Gi"],
    ["1.5Gi", "1536Mi"],
    ["1.5G", "1500M"],
    ["0.5", "500m"],
    ["1000", "1k"],
    ["1500", "1500"],
    ["500m", "500m"],
    ["100m", "100m"],
    ["0.1", "100m"],
    ["1e3", "1e3"],
    ["1.5e3", "1500"],
    ["512", "512"],
    ["0.5Ki", "512"],
    ["1000Ki", "1000Ki"],
    ["1.5Ki", "1536"],
    ["0Gi", "0"],
    ["-1Gi", "-1Gi"],
    ["1E", "1E"],
    ["10E", "10E"],
  ];
  for (const [input, canonical] of cases) assert.equal(canonicalQuantity(input), canonical, input);
});

test("compares across formats", () => {
  assert.equal(compareQuantities(parseQuantity("1Gi"), parseQuantity("1073741824")), 0);
  assert.equal(compareQuantities(parseQuantity("1G"), parseQuantity("1Gi")), -1);
  assert.equal(compareQuantities(parseQuantity("2Gi"), parseQuantity("1.5Gi")), 1);
  assert.equal(compareQuantities(parseQuantity("999m"), parseQuantity("1")), -1);
});

test("rejects malformed quantities with upstream messages", () => {
  for (const bad of ["", "abc", "1.5.5", "Gi", "1 Gi", "1Gi ", "1K", "1e", "--1"]) {
    assert.throws(() => parseQuantity(bad), /quantit|numeric/, bad);
  }
  assert.throws(() => parseQuantity("abc"), {
    message: "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
  });
  assert.equal(tryParseQuantity("x"), undefined);
  assert.equal(tryParseQuantity(5)?.nanos, 5_000_000_000n);
  assert.equal(tryParseQuantity({}), undefined);
});

test("hostile input is refused quickly", () => {
  for (const bad of [
    "1".repeat(3_000_000) + "x",
    "1".repeat(3_000_000) + "e",
    "." + "1".repeat(100_000) + "..",
  ]) {
    assert.throws(() => parseQuantity(bad), /quantit/);
  }
});

test("values beyond 2^53 stay exact", () => {
  const q = quantityFromValue(2n ** 60n);
  assert.equal(canonicalQuantity("1Ei"), "1Ei");
  assert.equal(quantityValue(q), 2n ** 60n);
  assert.equal(canonicalQuantity("9007199254740993"), "9007199254740993");
});

test("parseByteQuantity: the one byte parser for flags and config (binary, decimal, plain, exponent)", () => {
  assert.equal(parseByteQuantity("1Gi", "size"), 1n << 30n);
  assert.equal(parseByteQuantity("100Mi", "size"), 100n << 20n);
  assert.equal(parseByteQuantity("5G", "size"), 5_000_000_000n);
  assert.equal(parseByteQuantity("1024", "size"), 1024n);
  assert.equal(parseByteQuantity("1.5Ki", "size"), 1536n);
  assert.equal(parseByteQuantity("1e3", "size"), 1000n);
  assert.equal(parseByteQuantity("0.5", "size"), 1n);
  assert.equal(parseByteQuantity(" 10Mi ", "size"), 10n << 20n);
  for (const bad of ["", "1GB", "Gi", "1 Gi x"])
    assert.throws(() => parseByteQuantity(bad, "--capacity"), /--capacity: .* is not a byte quantity/);
  assert.throws(() => parseByteQuantity("-1Gi", "--capacity"), /negative/);
  assert.throws(() => parseByteQuantity("9Ei", "--capacity"), /out of range/);
});

test("decimal exponents as upstream reads and writes them: 1e1000 is a quantity, written 10e999", () => {
  // Canonical exponents are multiples of three with no upper bound (DecimalSI stops at E).
  assert.equal(canonicalQuantity("1e21"), "1e21");
  assert.equal(canonicalQuantity("1e1000"), "10e999");
  assert.equal(canonicalQuantity("1000E"), "1000E");
  // Far below a nano-unit: rounded up to one, as upstream rounds, without building 10^5000.
  assert.equal(canonicalQuantity("1e-5000"), "1e-9");
  assert.equal(canonicalQuantity("-3e-5000"), "-1e-9");
  assert.equal(canonicalQuantity("0e-5000"), "0");
  // The exponent is an int64 kept as an int32: 2^32 wraps to 0; beyond int64 the suffix is bad.
  assert.equal(canonicalQuantity("1e4294967296"), "1");
  assert.throws(() => parseQuantity("1e99999999999999999999"), /unable to parse quantity's suffix/);
  // csikit's own bound: exact nano-unit counts stop at 10^1000.
  assert.throws(() => parseQuantity("1e1001"), /unable to parse numeric part of quantity/);
});
