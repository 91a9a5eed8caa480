// The Kubernetes CEL libraries a CRD's x-kubernetes-validations may use beyond the CEL standard
// (apiextensions-apiserver's base environment at 1.32), registered on a cel-js Environment:
// - quantity: `quantity(s)`, `isQuantity(s)`, `.sign()`, `.isInteger()`, `.asInteger()`,
//   `.asApproximateFloat()`, `.add()`/`.sub()` (quantity or int), `.isGreaterThan()`,
//   `.isLessThan()`, `.compareTo()`, `==`;
// - url: `url(s)`, `isURL(s)`, `.getScheme()`, `.getHost()`, `.getHostname()`, `.getPort()`,
//   `.getEscapedPath()`, `.getQuery()` — a URL is an absolute URI or an absolute path, as Go's
//   url.ParseRequestURI accepts;
// - ip and cidr: `ip(s)`, `isIP(s)`, `ip.isCanonical(s)`, `.family()`, `.isUnspecified()`,
//   `.isLoopback()`, `.isLinkLocalMulticast()`, `.isLinkLocalUnicast()`, `.isGlobalUnicast()`,
//   `cidr(s)`, `isCIDR(s)`, `.containsIP()`, `.containsCIDR()`, `.ip()`, `.masked()`,
//   `.prefixLength()`, `string()` of both, `==` — IPv4-mapped IPv6 addresses and zones refused,
//   as upstream;
// - sets (cel-go ext): `sets.contains`, `sets.equivalent`, `sets.intersects`;
// - strings (cel-go ext, version 2) beyond what cel-js has: `charAt`, `replace` (with and without
//   a count), `strings.quote`;
// - format: `format.<name>()` and `format.named(name)` (optional), `.validate(s)` answering
//   optional.none() when valid and the list of errors otherwise, for upstream's names
//   (dns1123Label, dns1123Subdomain, dns1035Label, qualifiedName, the three *Prefix forms,
//   labelValue, uri, uuid, byte, date, datetime) with the messages of apimachinery's validators.
// Namespaced functions (`sets.contains`, `ip.isCanonical`, `strings.quote`) are receiver
// functions on a constant of a library type, which is how cel-js can spell them.
// Errors read as upstream's (for example "invalid quantity", "cannot convert value to integer").

import { isIP as nodeIsIP } from "node:net";
import { Optional, type Environment } from "@marcbachmann/cel-js";
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from "../../api/index.ts";
import {
  addQuantities,
  compareQuantities,
  formatQuantity,
  quantityFromValue,
  subtractQuantities,
  tryParseQuantity,
  type Quantity,
  CsikitError,
} from "../../base/index.ts";

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const NANO = 1_000_000_000n;

class KubeQuantity {
  readonly quantity: Quantity;
  constructor(quantity: Quantity) {
    this.quantity = quantity;
  }
}

function quantityOf(text: string): KubeQuantity {
  const parsed = tryParseQuantity(text);
  if (parsed === undefined) throw new CsikitError("CSIKIT_ERR_CEL", "invalid quantity");
  return new KubeQuantity(parsed);
}

function toQuantity(value: KubeQuantity | bigint): Quantity {
  return value instanceof KubeQuantity ? value.quantity : quantityFromValue(value, "DecimalSI");
}

function asInteger(q: KubeQuantity): bigint {
  const { nanos } = q.quantity;
  if (nanos % NANO !== 0n) throw new CsikitError("CSIKIT_ERR_CEL", "cannot convert value to integer");
  const value = nanos / NANO;
  if (value > INT64_MAX || value < INT64_MIN)
    throw new CsikitError("CSIKIT_ERR_CEL", "cannot convert value to integer");
  return value;
}

class KubeURL {
  readonly url: URL;
  readonly source: string;
  constructor(url: URL, source: string) {
    this.url = url;
    this.source = source;
  }
}

/** Go's url.ParseRequestURI: an absolute URI (scheme:…) or an absolute path; no fragment. */
function parseRequestURI(text: string): KubeURL | undefined {
  if (text === "" || text.includes("#") || /[\s\u0000-\u001f\u007f]/.test(text)) return undefined;
  if (text.startsWith("/")) {
    try {
      return new KubeURL(new URL(text, "relative:///"), text);
    } catch {
      return undefined;
    }
  }
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text)) return undefined;
  try {
    return new KubeURL(new URL(text), text);
  } catch {
    return undefined;
  }
}

function urlOf(text: string): KubeURL {
  const url = parseRequestURI(text);
  if (url === undefined)
    throw new CsikitError("CSIKIT_ERR_CEL", `URL parse error during conversion from string: ${text}`);
  return url;
}

function hostOf(url: KubeURL): string {
  return url.url.protocol === "relative:" ? "" : url.url.host;
}

function queryOf(url: KubeURL): Map<string, string[]> {
  const query = new Map<string, string[]>();
  for (const [key, value] of url.url.searchParams) query.set(key, [...(query.get(key) ?? []), value]);
  return query;
}

/** An IP address as its 4 or 16 bytes (as one bigint) and family. */
class KubeIP {
  readonly family: 4 | 6;
  readonly value: bigint;
  constructor(family: 4 | 6, value: bigint) {
    this.family = family;
    this.value = value;
  }
  get bits(): number {
    return this.family === 4 ? 32 : 128;
  }
}

function parseIPv4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    // Leading zeros are refused, as Go's netip (and so upstream) refuses them.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) return undefined;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

function parseIPv6(text: string): bigint | undefined {
  if (nodeIsIP(text) !== 6 || text.includes("%")) return undefined;
  let head = text;
  let tail4: bigint | undefined;
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    tail4 = parseIPv4(text.slice(lastColon + 1));
    if (tail4 === undefined) return undefined;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split("::");
  const left = halves[0] ? halves[0].split(":") : [];
  const right = halves.length > 1 && halves[1] ? halves[1].split(":") : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(`0x${group || "0"}`);
  if (tail4 !== undefined) value = (value & ~0xffffffffn) | tail4;
  return value;
}

function parseIP(text: string): KubeIP | undefined {
  const v4 = parseIPv4(text);
  if (v4 !== undefined) return new KubeIP(4, v4);
  const v6 = parseIPv6(text);
  if (v6 === undefined) return undefined;
  // IPv4-mapped IPv6 (::ffff:a.b.c.d) is refused, as upstream's library refuses it.
  if (v6 >> 32n === 0xffffn) return undefined;
  return new KubeIP(6, v6);
}

function ipOf(text: string): KubeIP {
  const ip = parseIP(text);
  if (ip === undefined)
    throw new CsikitError(
      "CSIKIT_ERR_CEL",
      `IP Address ${JSON.stringify(text)} parse error during conversion from string`,
    );
  return ip;
}

function formatIP(ip: KubeIP): string {
  if (ip.family === 4)
    return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join(".");
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => (ip.value >> shift) & 0xffffn);
  // RFC 5952: the longest run (≥ 2) of zero groups, the first of equals, becomes "::".
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0n) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0n) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

function inPrefix(ip: KubeIP, prefix: bigint, length: number): boolean {
  const shift = BigInt(ip.bits - length);
  return ip.value >> shift === prefix >> shift;
}

function isGlobalUnicast(ip: KubeIP): boolean {
  if (ip.family === 4) {
    if (ip.value === 0xffffffffn || ip.value === 0n) return false;
    return !inPrefix(ip, 0x7f000000n, 8) && !inPrefix(ip, 0xa9fe0000n, 16) && !inPrefix(ip, 0xe0000000n, 4);
  }
  if (ip.value === 0n || ip.value === 1n) return false;
  return !inPrefix(ip, 0xfe80n << 112n, 10) && !inPrefix(ip, 0xffn << 120n, 8);
}

class KubeCIDR {
  readonly ip: KubeIP;
  readonly length: number;
  constructor(ip: KubeIP, length: number) {
    this.ip = ip;
    this.length = length;
  }
  masked(): KubeCIDR {
    const shift = BigInt(this.ip.bits - this.length);
    return new KubeCIDR(new KubeIP(this.ip.family, (this.ip.value >> shift) << shift), this.length);
  }
}

function parseCIDR(text: string): KubeCIDR | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const ip = parseIP(text.slice(0, slash));
  const lengthText = text.slice(slash + 1);
  if (ip === undefined || !/^(0|[1-9][0-9]{0,2})$/.test(lengthText)) return undefined;
  const length = Number(lengthText);
  return length > ip.bits ? undefined : new KubeCIDR(ip, length);
}

function cidrOf(text: string): KubeCIDR {
  const cidr = parseCIDR(text);
  if (cidr === undefined)
    throw new CsikitError(
      "CSIKIT_ERR_CEL",
      `network address parse error during conversion from string: ${text}`,
    );
  return cidr;
}

function cidrContainsIP(cidr: KubeCIDR, ip: KubeIP): boolean {
  return ip.family === cidr.ip.family && inPrefix(ip, cidr.ip.value, cidr.length);
}

const DNS1035_MESSAGE =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

function isDNS1035Label(value: string): string[] {
  const errors: string[] = [];
  if (value.length > 63) errors.push("must be no more than 63 characters");
  if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(value)) errors.push(DNS1035_MESSAGE);
  return errors;
}

/** apimachinery's prefix forms: a trailing dash is allowed (a generateName prefix). */
const asPrefix =
  (validate: (value: string) => string[]) =>
  (value: string): string[] =>
    validate(value.endsWith("-") ? `${value.slice(0, -1)}a` : value);

const FORMATS: Readonly<Record<string, (value: string) => string[]>> = {
  dns1123Label: isDNS1123Label,
  dns1123Subdomain: isDNS1123Subdomain,
  dns1035Label: isDNS1035Label,
  qualifiedName: isQualifiedName,
  dns1123LabelPrefix: asPrefix(isDNS1123Label),
  dns1123SubdomainPrefix: asPrefix(isDNS1123Subdomain),
  dns1035LabelPrefix: asPrefix(isDNS1035Label),
  labelValue: isValidLabelValue,
  uri: (value) => (parseRequestURI(value) === undefined ? ["invalid URI"] : []),
  uuid: (value) =>
    /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(value)
      ? []
      : ["does not match the UUID format"],
  byte: (value) =>
    /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(value) ? [] : ["invalid base64"],
  date: (value) => (isDate(value) ? [] : ["invalid date"]),
  datetime: (value) =>
    /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(value) &&
    isDate(value.slice(0, 10)) &&
    !Number.isNaN(Date.parse(value))
      ? []
      : ["invalid datetime"],
};

function isDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

class NamedFormat {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

/** Receivers of the namespaced functions. */
class SetsLibrary {}
class StringsLibrary {}
class IPLibrary {}
class FormatLibrary {}

function sameElement(a: unknown, b: unknown): boolean {
  if (typeof a === "object" && a !== null)
    return JSON.stringify(a, bigintSafe) === JSON.stringify(b, bigintSafe);
  // CEL's heterogeneous equality: 1 == 1.0 == 1u.
  if ((typeof a === "bigint" || typeof a === "number") && (typeof b === "bigint" || typeof b === "number"))
    return Number(a) === Number(b);
  return a === b;
}

function bigintSafe(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? `${value}n` : value;
}

const contains = (list: unknown[], sub: unknown[]): boolean =>
  sub.every((item) => list.some((other) => sameElement(item, other)));

function codePoints(text: string): string[] {
  return [...text];
}

/** Go's strings.Replace: at most `count` replacements (all when negative); "" matches between runes. */
function replaceN(text: string, from: string, to: string, count: bigint): string {
  const limit = count < 0n ? Infinity : Number(count);
  if (from === "") {
    const points = codePoints(text);
    let out = "";
    for (let i = 0; i <= points.length; i++) {
      if (i < limit) out += to;
      out += points[i] ?? "";
    }
    return out;
  }
  const parts = text.split(from);
  if (parts.length - 1 <= limit) return parts.join(to);
  return parts.slice(0, limit + 1).join(to) + from + parts.slice(limit + 1).join(from);
}

/** Registers the libraries above on `environment` and returns it. */
export function withKubernetesLibraries(environment: Environment): Environment {
  return withFormatNames(registerLibraries(environment));
}

/** `format.dns1123Label()` and its siblings: one receiver function per format name. */
function withFormatNames(environment: Environment): Environment {
  let out = environment;
  for (const name of Object.keys(FORMATS))
    out = out.registerFunction(
      `csikit.FormatLibrary.${name}(): kubernetes.NamedFormat`,
      () => new NamedFormat(name),
    );
  return out;
}

function registerLibraries(environment: Environment): Environment {
  return (
    environment
      .registerType("kubernetes.Quantity", KubeQuantity)
      .registerType("kubernetes.URL", KubeURL)
      .registerType("net.IP", KubeIP)
      .registerType("net.CIDR", KubeCIDR)
      .registerType("csikit.SetsLibrary", SetsLibrary)
      .registerType("csikit.StringsLibrary", StringsLibrary)
      .registerType("csikit.IPLibrary", IPLibrary)
      .registerConstant("sets", "csikit.SetsLibrary", new SetsLibrary())
      .registerConstant("strings", "csikit.StringsLibrary", new StringsLibrary())
      .registerConstant("ip", "csikit.IPLibrary", new IPLibrary())
      .registerType("kubernetes.NamedFormat", NamedFormat)
      .registerType("csikit.FormatLibrary", FormatLibrary)
      .registerConstant("format", "csikit.FormatLibrary", new FormatLibrary())
      // quantity
      .registerFunction("quantity(string): kubernetes.Quantity", quantityOf)
      .registerFunction("isQuantity(string): bool", (text: string) => tryParseQuantity(text) !== undefined)
      .registerFunction("kubernetes.Quantity.sign(): int", (q: KubeQuantity) =>
        BigInt(Math.sign(Number(q.quantity.nanos))),
      )
      .registerFunction("kubernetes.Quantity.isInteger(): bool", (q: KubeQuantity) => {
        try {
          asInteger(q);
          return true;
        } catch {
          return false;
        }
      })
      .registerFunction("kubernetes.Quantity.asInteger(): int", asInteger)
      .registerFunction(
        "kubernetes.Quantity.asApproximateFloat(): double",
        (q: KubeQuantity) => Number(q.quantity.nanos) / 1e9,
      )
      .registerFunction(
        "kubernetes.Quantity.add(kubernetes.Quantity): kubernetes.Quantity",
        (a: KubeQuantity, b: KubeQuantity) => new KubeQuantity(addQuantities(a.quantity, b.quantity)),
      )
      .registerFunction(
        "kubernetes.Quantity.add(int): kubernetes.Quantity",
        (a: KubeQuantity, b: bigint) => new KubeQuantity(addQuantities(a.quantity, toQuantity(b))),
      )
      .registerFunction(
        "kubernetes.Quantity.sub(kubernetes.Quantity): kubernetes.Quantity",
        (a: KubeQuantity, b: KubeQuantity) => new KubeQuantity(subtractQuantities(a.quantity, b.quantity)),
      )
      .registerFunction(
        "kubernetes.Quantity.sub(int): kubernetes.Quantity",
        (a: KubeQuantity, b: bigint) => new KubeQuantity(subtractQuantities(a.quantity, toQuantity(b))),
      )
      .registerFunction(
        "kubernetes.Quantity.isGreaterThan(kubernetes.Quantity): bool",
        (a: KubeQuantity, b: KubeQuantity) => compareQuantities(a.quantity, b.quantity) > 0,
      )
      .registerFunction(
        "kubernetes.Quantity.isLessThan(kubernetes.Quantity): bool",
        (a: KubeQuantity, b: KubeQuantity) => compareQuantities(a.quantity, b.quantity) < 0,
      )
      .registerFunction(
        "kubernetes.Quantity.compareTo(kubernetes.Quantity): int",
        (a: KubeQuantity, b: KubeQuantity) => BigInt(compareQuantities(a.quantity, b.quantity)),
      )
      .registerFunction("string(kubernetes.Quantity): string", (q: KubeQuantity) =>
        formatQuantity(q.quantity),
      )
      .registerOperator(
        "kubernetes.Quantity == kubernetes.Quantity",
        (a: KubeQuantity, b: KubeQuantity) => compareQuantities(a.quantity, b.quantity) === 0,
      )
      // url
      .registerFunction("url(string): kubernetes.URL", urlOf)
      .registerFunction("isURL(string): bool", (text: string) => parseRequestURI(text) !== undefined)
      .registerFunction("kubernetes.URL.getScheme(): string", (url: KubeURL) =>
        url.url.protocol === "relative:" ? "" : url.url.protocol.slice(0, -1),
      )
      .registerFunction("kubernetes.URL.getHost(): string", hostOf)
      .registerFunction("kubernetes.URL.getHostname(): string", (url: KubeURL) =>
        hostOf(url) === "" ? "" : url.url.hostname.replace(/^\[(.*)\]$/, "$1"),
      )
      .registerFunction("kubernetes.URL.getPort(): string", (url: KubeURL) => url.url.port)
      .registerFunction("kubernetes.URL.getEscapedPath(): string", (url: KubeURL) => url.url.pathname)
      .registerFunction("kubernetes.URL.getQuery(): map<string, list<string>>", queryOf)
      .registerFunction("string(kubernetes.URL): string", (url: KubeURL) => url.source)
      // ip
      .registerFunction("ip(string): net.IP", ipOf)
      .registerFunction("isIP(string): bool", (text: string) => parseIP(text) !== undefined)
      .registerFunction(
        "csikit.IPLibrary.isCanonical(string): bool",
        (_lib: IPLibrary, text: string) => formatIP(ipOf(text)) === text,
      )
      .registerFunction("net.IP.family(): int", (ip: KubeIP) => BigInt(ip.family))
      .registerFunction("net.IP.isUnspecified(): bool", (ip: KubeIP) => ip.value === 0n)
      .registerFunction("net.IP.isLoopback(): bool", (ip: KubeIP) =>
        ip.family === 4 ? inPrefix(ip, 0x7f000000n, 8) : ip.value === 1n,
      )
      .registerFunction("net.IP.isLinkLocalMulticast(): bool", (ip: KubeIP) =>
        ip.family === 4 ? inPrefix(ip, 0xe0000000n, 24) : inPrefix(ip, 0xff02n << 112n, 16),
      )
      .registerFunction("net.IP.isLinkLocalUnicast(): bool", (ip: KubeIP) =>
        ip.family === 4 ? inPrefix(ip, 0xa9fe0000n, 16) : inPrefix(ip, 0xfe80n << 112n, 10),
      )
      .registerFunction("net.IP.isGlobalUnicast(): bool", isGlobalUnicast)
      .registerFunction("string(net.IP): string", formatIP)
      .registerOperator(
        "net.IP == net.IP",
        (a: KubeIP, b: KubeIP) => a.family === b.family && a.value === b.value,
      )
      // cidr
      .registerFunction("cidr(string): net.CIDR", cidrOf)
      .registerFunction("isCIDR(string): bool", (text: string) => parseCIDR(text) !== undefined)
      .registerFunction("net.CIDR.containsIP(net.IP): bool", cidrContainsIP)
      .registerFunction("net.CIDR.containsIP(string): bool", (cidr: KubeCIDR, text: string) =>
        cidrContainsIP(cidr, ipOf(text)),
      )
      .registerFunction(
        "net.CIDR.containsCIDR(net.CIDR): bool",
        (cidr: KubeCIDR, other: KubeCIDR) => other.length >= cidr.length && cidrContainsIP(cidr, other.ip),
      )
      .registerFunction("net.CIDR.containsCIDR(string): bool", (cidr: KubeCIDR, text: string) => {
        const other = cidrOf(text);
        return other.length >= cidr.length && cidrContainsIP(cidr, other.ip);
      })
      .registerFunction("net.CIDR.ip(): net.IP", (cidr: KubeCIDR) => cidr.ip)
      .registerFunction("net.CIDR.masked(): net.CIDR", (cidr: KubeCIDR) => cidr.masked())
      .registerFunction("net.CIDR.prefixLength(): int", (cidr: KubeCIDR) => BigInt(cidr.length))
      .registerFunction("string(net.CIDR): string", (cidr: KubeCIDR) => `${formatIP(cidr.ip)}/${cidr.length}`)
      .registerOperator(
        "net.CIDR == net.CIDR",
        (a: KubeCIDR, b: KubeCIDR) =>
          a.length === b.length && a.ip.family === b.ip.family && a.ip.value === b.ip.value,
      )
      // sets
      .registerFunction(
        "csikit.SetsLibrary.contains(list, list): bool",
        (_lib: SetsLibrary, a: unknown[], b: unknown[]) => contains(a, b),
      )
      .registerFunction(
        "csikit.SetsLibrary.equivalent(list, list): bool",
        (_lib: SetsLibrary, a: unknown[], b: unknown[]) => contains(a, b) && contains(b, a),
      )
      .registerFunction(
        "csikit.SetsLibrary.intersects(list, list): bool",
        (_lib: SetsLibrary, a: unknown[], b: unknown[]) =>
          a.some((item) => b.some((other) => sameElement(item, other))),
      )
      // strings
      .registerFunction("string.charAt(int): string", (text: string, index: bigint) => {
        const points = codePoints(text);
        if (index < 0n || index > BigInt(points.length))
          throw new CsikitError("CSIKIT_ERR_CEL", `index out of range: ${index}`);
        return points[Number(index)] ?? "";
      })
      .registerFunction("string.replace(string, string): string", (text: string, from: string, to: string) =>
        replaceN(text, from, to, -1n),
      )
      .registerFunction("string.replace(string, string, int): string", replaceN)
      .registerFunction("csikit.StringsLibrary.quote(string): string", (_lib: StringsLibrary, text: string) =>
        JSON.stringify(text),
      )
      .registerFunction(
        "csikit.FormatLibrary.named(string): optional<kubernetes.NamedFormat>",
        (_lib: FormatLibrary, name: string) =>
          Object.hasOwn(FORMATS, name) ? Optional.of(new NamedFormat(name)) : Optional.none(),
      )
      .registerFunction(
        "kubernetes.NamedFormat.validate(string): optional<list<string>>",
        (format: NamedFormat, value: string) => {
          const errors = FORMATS[format.name]?.(value) ?? [];
          return errors.length === 0 ? Optional.none() : Optional.of(errors);
        },
      )
  );
}
