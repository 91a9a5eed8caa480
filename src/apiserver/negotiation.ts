// Content negotiation of responses and request bodies, as kube-apiserver's negotiation
// package does it for a resource: the Accept header's media ranges are tried in order of q
// (then specificity, then position); the first one the endpoint can produce wins; `*/*` and
// `application/*` mean JSON; no Accept means JSON; a header naming only types the endpoint
// cannot produce is 406 NotAcceptable listing what it can. Built-in kinds speak JSON, YAML and
// protobuf; custom resources JSON and YAML only (upstream's CR handler has no protobuf).
// Entries carrying a conversion (`as=Table;g=meta.k8s.io;v=v1`) are table.ts's business and
// are skipped here, as are entries with parameters this server does not understand.

import { stringify as stringifyYaml } from "yaml";
import { ApiError } from "./status.ts";

export type WireFormat = "json" | "yaml" | "protobuf";

export const JSON_MEDIA_TYPE = "application/json";
export const PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf";
/** The Content-Type of a protobuf watch stream (JSON watches stay plain application/json). */
export const PROTOBUF_WATCH_MEDIA_TYPE = "application/vnd.kubernetes.protobuf;stream=watch";
export const YAML_MEDIA_TYPE = "application/yaml";

const MEDIA_TYPES: Readonly<Record<WireFormat, string>> = {
  json: JSON_MEDIA_TYPE,
  yaml: YAML_MEDIA_TYPE,
  protobuf: PROTOBUF_MEDIA_TYPE,
};

/** The media types an endpoint serves, in upstream's listing order. */
export function servedFormats(protobuf: boolean): readonly WireFormat[] {
  return protobuf ? ["json", "yaml", "protobuf"] : ["json", "yaml"];
}

export function mediaTypeOf(format: WireFormat): string {
  return MEDIA_TYPES[format];
}

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
  params: Map<string, string>;
  position: number;
}

function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  header.split(",").forEach((part, position) => {
    const [full, ...rawParams] = part.split(";").map((piece) => piece.trim());
    if (!full) return;
    const [type = "", subtype = "*"] = full.toLowerCase().split("/");
    const params = new Map<string, string>();
    let q = 1;
    for (const param of rawParams) {
      const eq = param.indexOf("=");
      if (eq < 0) continue;
      const key = param.slice(0, eq).trim().toLowerCase();
      const value = param.slice(eq + 1).trim();
      if (key === "q") q = Number(value);
      else params.set(key, value);
    }
    if (!Number.isFinite(q) || q <= 0) return;
    ranges.push({ type, subtype, q, params, position });
  });
  const specificity = (r: MediaRange): number => (r.type === "*" ? 0 : r.subtype === "*" ? 1 : 2);
  return ranges.sort((a, b) => b.q - a.q || specificity(b) - specificity(a) || a.position - b.position);
}

/** Parameters a plain (non-converting) response may be asked for with. */
const PLAIN_PARAMS = new Set(["charset", "pretty", "stream"]);

/**
 * The format to answer in. `undefined` Accept or "" means JSON; a header none of whose ranges
 * the endpoint serves is 406.
 */
export function negotiateOutput(accept: string | undefined, protobuf: boolean): WireFormat {
  if (accept === undefined || accept.trim() === "") return "json";
  const formats = servedFormats(protobuf);
  for (const range of parseAccept(accept)) {
    if ([...range.params.keys()].some((key) => !PLAIN_PARAMS.has(key))) continue;
    if (range.type === "*" || (range.type === "application" && range.subtype === "*")) return "json";
    if (range.type !== "application") continue;
    const format = formats.find((f) => MEDIA_TYPES[f] === `application/${range.subtype}`);
    if (format) return format;
  }
  throw notAcceptable(formats);
}

export function notAcceptable(formats: readonly WireFormat[]): ApiError {
  return new ApiError(
    406,
    "NotAcceptable",
    `only the following media types are accepted: ${formats.map((f) => MEDIA_TYPES[f]).join(", ")}`,
  );
}

/** JSON text of a body in YAML, for `Accept: application/yaml`. */
export function toYaml(body: unknown): string {
  return stringifyYaml(body);
}
