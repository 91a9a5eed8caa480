// The Kubernetes CEL libraries as a CRD rule sees them (through compileCelRule/checkCelRule),
// with the results upstream's library tests give for the same expressions.

import assert from "node:assert/strict";
import { test } from "node:test";
import { checkCelRule, compileCelRule } from "./cel.ts";

function holds(rule: string, self: unknown = {}): boolean | string {
  const compiled = compileCelRule(rule);
  assert.ok(compiled.ok, `${rule}: ${compiled.ok ? "" : compiled.error}`);
  const outcome = checkCelRule(compiled.rule, self);
  return outcome.ok ? true : (outcome.error ?? false);
}

function allHold(rules: string[], self: unknown = {}): void {
  for (const rule of rules) assert.equal(holds(rule, self), true, rule);
}

test("quantity library", () => {
  allHold(
    [
      'quantity("1Gi") == quantity("1024Mi")',
      'quantity("500m").isLessThan(quantity("1"))',
      'quantity("2").isGreaterThan(quantity("1999m"))',
      'quantity("1").compareTo(quantity("1000m")) == 0',
      'quantity("-3").sign() == -1 && quantity("0").sign() == 0',
      'quantity("1k").isInteger() && !quantity("1.5").isInteger()',
      'quantity("1Ki").asInteger() == 1024',
      'quantity("1.5").asApproximateFloat() == 1.5',
      'quantity("1Mi").add(quantity("1Mi")) == quantity("2Mi")',
      'quantity("5").sub(2) == quantity("3")',
      'isQuantity("10Gi") && !isQuantity("ten")',
      'quantity(self.size).isLessThan(quantity("1Ti"))',
    ],
    { size: "500Gi" },
  );
  assert.match(String(holds('quantity("1.5").asInteger() == 1')), /cannot convert value to integer/);
  assert.match(String(holds('quantity("x") == quantity("1")')), /invalid quantity/);
});

test("url library", () => {
  allHold([
    'url("https://example.com:8443/a%20b?x=1&x=2&y=3").getScheme() == "https"',
    'url("https://example.com:8443/p").getHost() == "example.com:8443"',
    'url("https://example.com:8443/p").getHostname() == "example.com"',
    'url("https://[::1]:80/").getHostname() == "::1"',
    'url("https://example.com:8443/p").getPort() == "8443"',
    'url("https://example.com/a%20b").getEscapedPath() == "/a%20b"',
    'url("https://example.com/?x=1&x=2&y=3").getQuery() == {"x": ["1", "2"], "y": ["3"]}',
    'url("/absolute/path").getHost() == "" && url("/absolute/path").getScheme() == ""',
    'isURL("https://example.com") && isURL("/path") && !isURL("relative/path") && !isURL("")',
  ]);
  assert.match(String(holds('url("not a url").getScheme() == ""')), /URL parse error/);
});

test("ip and cidr libraries", () => {
  allHold([
    'ip("192.168.0.1").family() == 4 && ip("2001:db8::1").family() == 6',
    'isIP("10.0.0.1") && !isIP("10.0.0.256") && !isIP("010.0.0.1") && !isIP("::ffff:1.2.3.4") && !isIP("fe80::1%eth0")',
    'ip.isCanonical("2001:db8::1") && !ip.isCanonical("2001:DB8::1") && !ip.isCanonical("2001:db8:0:0:0:0:0:1")',
    'ip("127.0.0.1").isLoopback() && ip("::1").isLoopback() && !ip("10.0.0.1").isLoopback()',
    'ip("0.0.0.0").isUnspecified() && ip("::").isUnspecified()',
    'ip("169.254.1.1").isLinkLocalUnicast() && ip("fe80::1").isLinkLocalUnicast()',
    'ip("224.0.0.251").isLinkLocalMulticast() && ip("ff02::fb").isLinkLocalMulticast()',
    'ip("8.8.8.8").isGlobalUnicast() && !ip("255.255.255.255").isGlobalUnicast()',
    'string(ip("2001:0db8:0000:0000:0000:0000:0000:0001")) == "2001:db8::1"',
    'cidr("10.0.0.0/8").containsIP("10.1.2.3") && !cidr("10.0.0.0/8").containsIP("11.0.0.1")',
    'cidr("10.0.0.0/8").containsIP(ip("10.255.255.255"))',
    'cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16") && !cidr("10.1.0.0/16").containsCIDR("10.0.0.0/8")',
    'cidr("192.168.1.7/24").masked() == cidr("192.168.1.0/24")',
    'cidr("192.168.1.7/24").ip() == ip("192.168.1.7") && cidr("192.168.1.7/24").prefixLength() == 24',
    'string(cidr("2001:db8::/32")) == "2001:db8::/32"',
    'isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0/33") && !isCIDR("10.0.0.0")',
    '!cidr("::/0").containsIP("1.2.3.4")',
  ]);
});

test("sets and strings extensions", () => {
  allHold([
    "sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2])",
    "sets.equivalent([1, 2, 2], [2, 1]) && !sets.equivalent([1], [1, 2])",
    "sets.intersects([1, 2], [2, 5]) && !sets.intersects([1], [3])",
    '"héllo".charAt(1) == "é" && "abc".charAt(3) == ""',
    '"a-b-c".replace("-", "+") == "a+b+c" && "a-b-c".replace("-", "+", 1) == "a+b-c"',
    '"abcabc".indexOf("c", 3) == 5 && "abcabc".lastIndexOf("a", 2) == 0',
    'strings.quote("a\\"b") == "\\"a\\\\\\"b\\""',
    "self.?missing.orValue(7) == 7",
  ]);
});

test("format library: named formats validate to none or the validator's errors", () => {
  allHold(
    [
      '!format.dns1123Label().validate("my-name").hasValue()',
      'format.dns1123Label().validate("My_Name").hasValue()',
      'format.dns1035Label().validate("1abc").value().size() == 1',
      'format.dns1035Label().validate("1abc").value()[0].startsWith("a DNS-1035 label must consist of")',
      '!format.dns1123LabelPrefix().validate("prefix-").hasValue()',
      '!format.named("qualifiedName").value().validate("example.com/name").hasValue()',
      '!format.named("no-such-format").hasValue()',
      'format.labelValue().validate("-bad-").hasValue()',
      '!format.uuid().validate("123e4567-e89b-12d3-a456-426614174000").hasValue()',
      'format.date().validate("2024-02-30").hasValue() && !format.date().validate("2024-02-29").hasValue()',
      '!format.datetime().validate("2024-02-29T10:00:00Z").hasValue() && format.datetime().validate("yesterday").hasValue()',
      '!format.uri().validate("https://example.com/x").hasValue() && format.uri().validate("x y").hasValue()',
      '!format.byte().validate("aGVsbG8=").hasValue() && format.byte().validate("***").hasValue()',
      "!format.dns1123Subdomain().validate(self.name).hasValue()",
    ],
    { name: "web.example.com" },
  );
});
