// Go encoding/json's syntax errors and sigs.k8s.io/json's duplicate-field paths, as kube-apiserver
// quotes them.

import { test } from "node:test";
import assert from "node:assert/strict";
import { goUnmarshalObjectError, scanGoJson } from "./go-json.ts";

test("json.Unmarshal into a map: Go's messages for every kind of bad input", () => {
  const cases: [string, string | undefined][] = [
    ['{"auths":{}}', undefined],
    ["null", undefined],
    ["", "unexpected end of JSON input"],
    ['{"a":', "unexpected end of JSON input"],
    ["not json", "invalid character 'o' in literal null (expecting 'u')"],
    ["{'a':1}", "invalid character '\\'' looking for beginning of object key string"],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', "invalid character '\"' after object key:value pair"],
    ["[1 2]", "invalid character '2' after array element"],
    ['{"a":1}x', "invalid character 'x' after top-level value"],
    ["01", "invalid character '1' after top-level value"],
    ["-x", "invalid character 'x' in numeric literal"],
    ["1.x", "invalid character 'x' after decimal point in numeric literal"],
    ["1ex", "invalid character 'x' in exponent of numeric literal"],
    ["trux", "invalid character 'x' in literal true (expecting 'e')"],
    ['{"a":"\\q"}', "invalid character 'q' in string escape code"],
    ['{"a":"\\u12g4"}', "invalid character 'g' in \\u hexadecimal character escape"],
    ['{"a":"x\ny"}', "invalid character '\\n' in string literal"],
    ["ÿ", "invalid character 'Ã' looking for beginning of value"],
    ["[1]", "json: cannot unmarshal array into Go value of type map[string]interface {}"],
    ['"s"', "json: cannot unmarshal string into Go value of type map[string]interface {}"],
    ["1", "json: cannot unmarshal number into Go value of type map[string]interface {}"],
    ["true", "json: cannot unmarshal bool into Go value of type map[string]interface {}"],
  ];
  for (const [input, want] of cases) {
    assert.equal(goUnmarshalObjectError(Buffer.from(input)), want, JSON.stringify(input));
  }
});

test("duplicate keys are named by path, in document order, at every depth", () => {
  const text = '{"a":1,"b":{"c":[{"d":1,"d":2}],"e":{}},"a":2,"b":{}, "f":{"g\\u00e9":1,"gé":2}}';
  assert.deepEqual(scanGoJson(Buffer.from(text)).duplicates, ["b.c[0].d", "a", "b", "f.gé"]);
  assert.deepEqual(scanGoJson(Buffer.from('{"a":[1,{"a":1}]}')).duplicates, []);
});

test("the scan is iterative: deep nesting does not overflow the stack", () => {
  const deep = "[".repeat(200_000) + "]".repeat(200_000);
  assert.equal(scanGoJson(Buffer.from(deep)).syntaxError, undefined);
});
