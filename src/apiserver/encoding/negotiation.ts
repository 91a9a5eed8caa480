// Content negotiation of responses and request bodies, as kube-apiserver's negotiation
// package does it for a resource: the Accept header's media ranges are tried in order of q
// (then specificity, then position); the first one the endpoint can produce wins; `*/*` and
// `application/*` mean JSON; no Accept means JSON; a header naming only types the endpoint
// cannot produce is 406 NotAcceptable listing what it can. Built-in kinds speak JSON, YAML and
// protobuf; custom resources JSON and YAML only (upstream's CR handler has no protobuf).
//
// An entry may ask for a conversion (`as=<Kind>;g=meta.k8s.io;v=v1`), as kube-apiserver's
// RequestScope.AllowsMediaTypeTransform decides: Table only as JSON or YAML (meta/v1 Table has
// no protobuf message upstream), PartialObjectMetadata and PartialObjectMetadataList in every
// format — protobuf too, even for custom resources, whose metadata is the same ObjectMeta. An
// entry whose conversion the server cannot make is skipped, so the next entry may match.

import { stringify as stringifyYaml } from "yaml";
import { ApiError } from "../transport/status.ts";

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

/** The meta.k8s.io/v1 forms a response may be converted to on request. */
export type Conversion = "Table" | "PartialObjectMetadata" | "PartialObjectMetadataList";

export interface Negotiated {
  format: WireFormat;
  convert?: Conversion;
}

/**
 * The format to answer in. `undefined` Accept or "" means JSON; a header none of whose ranges
 * the endpoint serves is 406.
 */
export function negotiateOutput(accept: string | undefined, protobuf: boolean): WireFormat {
  return negotiateResponse(accept, protobuf, false).format;
}

/**
 * The format and conversion to answer in (see the header). `conversions` false ignores
 * entries asking for one, as endpoints that serve no resource do.
 */
export function negotiateResponse(
  accept: string | undefined,
  protobuf: boolean,
  conversions = true,
): Negotiated {
  if (accept === undefined || accept.trim() === "") return { format: "json" };
  const formats = servedFormats(protobuf);
  for (const range of parseAccept(accept)) {
    const as = range.params.get("as");
    if (as !== undefined) {
      if (!conversions) continue;
      const convert = conversionOf(range);
      if (!convert) continue;
      const format = (convert === "Table" ? servedFormats(false) : servedFormats(true)).find(
        (f) => MEDIA_TYPES[f] === `${range.type}/${range.subtype}`,
      );
      if (format) return { format, convert };
      continue;
    }
    if ([...range.params.keys()].some((key) => !PLAIN_PARAMS.has(key))) continue;
    if (range.type === "*" || (range.type === "application" && range.subtype === "*"))
      return { format: "json" };
    if (range.type !== "application") continue;
    const format = formats.find((f) => MEDIA_TYPES[f] === `application/${range.subtype}`);
    if (format) return { format };
  }
  throw notAcceptable(formats);
}

function conversionOf(range: MediaRange): Conversion | undefined {
  if (range.params.get("g") !== "meta.k8s.io" || range.params.get("v") !== "v1") return undefined;
  const as = range.params.get("as");
  return as === "Table" || as === "PartialObjectMetadata" || as === "PartialObjectMetadataList"
    ? as
    : undefined;
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
