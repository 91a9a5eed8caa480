// The read verbs: get, and list with label/field selectors and limit/continue pagination over
// a pinned revision (the continue token carries the revision and the last key, so every page
// of one list reflects the same snapshot, as etcd-backed lists do; a compacted revision is 410).

import type { ListQuery, RestContext, RestResult, Target } from "./rest-types.ts";
import type { FieldCause, KubeObject, ResourceDef } from "./resource.ts";
import { fieldForbidden, fieldNotSupported } from "../../api/index.ts";
import { StoreError } from "../storage/types.ts";
import { apiVersionOf, collectionPrefix, forOutput, objectKey, outputHead } from "./objects.ts";
import { parseFieldSelector, parseLabelSelector, type ObjectMatcher } from "./selectors.ts";
import { ApiError, badRequest, expired, invalid, notFound } from "../transport/status.ts";

// ---------------------------------------------------------------------------------------------
// get / list

/**
 * With `encoded` asked for, an object whose stored text already is its output form is answered
 * with that text as is (decoded by nobody); see RestResult.encoded for what `body` holds then.
 */
export function getObject(
  ctx: RestContext,
  target: Target,
  options: { encoded?: boolean; resourceVersion?: string | null } = {},
): RestResult {
  const { def } = target;
  // "0" (any cached version) and "" (the latest) need no check; any other must parse and not
  // lie beyond the store, as etcd's Get checks its minimum resourceVersion.
  const wanted = options.resourceVersion ?? "";
  if (wanted !== "" && wanted !== "0") requireKnownRevision(ctx, parseResourceVersion(wanted));
  const stored = ctx.store.get(objectKey(def, target.namespace, target.name));
  if (!stored) throw notFound(def.group, def.resource, target.name);
  if (options.encoded && stored.json?.startsWith(outputHead(def))) {
    const metadata: Record<string, unknown> = { name: target.name };
    if (target.namespace !== "") metadata.namespace = target.namespace;
    metadata.resourceVersion = String(stored.revision);
    return {
      code: 200,
      body: { apiVersion: apiVersionOf(def), kind: def.kind, metadata },
      encoded: stored.json,
    };
  }
  return { code: 200, body: forOutput(def, stored.object) };
}

export interface ListPage {
  items: KubeObject[];
  /**
   * With `encoded` asked for: the items as JSON texts in output form, spliced from the store's
   * stored texts without decoding them (then `items` is empty).
   */
  encodedItems?: string[];
  revision: number;
  continueToken?: string;
  remainingItemCount?: number;
}

interface ContinuePosition {
  revision: number;
  startAfter: string;
}

function encodeContinue(position: ContinuePosition): string {
  return Buffer.from(
    JSON.stringify({ v: "meta.k8s.io/v1", rv: position.revision, start: position.startAfter }),
  ).toString("base64url");
}

function decodeContinue(token: string, prefix: string): ContinuePosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw badRequest(`continue key is not valid: illegal base64 data or JSON`);
  }
  if (
    typeof parsed !== "object" ||
    parsed === null ||
    !("v" in parsed) ||
    parsed.v !== "meta.k8s.io/v1" ||
    !("rv" in parsed) ||
    typeof parsed.rv !== "number" ||
    !("start" in parsed) ||
    typeof parsed.start !== "string"
  ) {
    throw badRequest(
      "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    );
  }
  if (!parsed.start.startsWith(prefix))
    throw badRequest("continue key is not valid: key does not match this list");
  return { revision: parsed.rv, startAfter: parsed.start };
}

/**
 * The `limit` parameter as upstream decodes ListOptions.Limit: an int64 (else 400 with
 * strconv's wording); zero or negative means no limit, as the storage layer treats it.
 */
export function parseLimit(value: string | null): number {
  if (value === null || value === "") return 0;
  if (!/^[+-]?\d+$/.test(value))
    throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(value)}: invalid syntax`);
  const parsed = BigInt(value);
  if (parsed > 9223372036854775807n || parsed < -9223372036854775808n) {
    throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(value)}: value out of range`);
  }
  if (parsed <= 0n) return 0;
  // Beyond any store's size: the same as no limit, and keeps arithmetic exact.
  return parsed > BigInt(Number.MAX_SAFE_INTEGER) ? 0 : Number(parsed);
}

/**
 * A resourceVersion newer than the store's latest revision can only come from another state
 * (a reset state directory): answer as kube-apiserver does once its cache cannot catch up —
 * 504 "Too large resource version" — so reflectors relist instead of waiting for revisions
 * that may never come.
 */
export function requireKnownRevision(ctx: RestContext, revision: number): number {
  const current = ctx.store.currentRevision();
  if (revision <= current) return revision;
  throw new ApiError(504, "Timeout", `Too large resource version: ${revision}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version", field: "" }],
    retryAfterSeconds: 1,
  });
}

/**
 * A resourceVersion parameter as the storage layer reads it (strconv.ParseUint, base 10):
 * anything else is upstream's 400 `invalid resource version: resourceVersion: Invalid value:
 * "abc": strconv.ParseUint: parsing "abc": invalid syntax`.
 */
export function parseResourceVersion(text: string): number {
  let problem: string | undefined;
  if (!/^\d+$/.test(text)) problem = "invalid syntax";
  else if (BigInt(text) > 18446744073709551615n) problem = "value out of range";
  if (problem !== undefined) {
    const quoted = JSON.stringify(text);
    throw badRequest(
      `invalid resource version: resourceVersion: Invalid value: ${quoted}: strconv.ParseUint: parsing ${quoted}: ${problem}`,
    );
  }
  return Number(text);
}

export function selectorsFor(
  def: ResourceDef,
  query: Pick<ListQuery, "labelSelector" | "fieldSelector">,
): ObjectMatcher {
  const byLabel = parseLabelSelector(query.labelSelector);
  const byField = parseFieldSelector(query.fieldSelector, def);
  return (object) => byLabel(object) && byField(object);
}

/** Upstream's ValidateListOptions for a list (not a watch): 422 on ListOptions.meta.k8s.io. */
export function validateListQuery(query: ListQuery): void {
  const causes: FieldCause[] = [];
  const match = query.resourceVersionMatch ?? "";
  if (match !== "") {
    if (!query.resourceVersion)
      causes.push(
        fieldForbidden(
          "resourceVersionMatch",
          "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
      );
    if (query.continueToken)
      causes.push(
        fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"),
      );
    if (match !== "Exact" && match !== "NotOlderThan")
      causes.push(fieldNotSupported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]));
    if (match === "Exact" && query.resourceVersion === "0")
      causes.push(
        fieldForbidden(
          "resourceVersionMatch",
          'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
      );
  }
  if (query.sendInitialEvents !== undefined && query.sendInitialEvents !== null)
    causes.push(fieldForbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  if (causes.length > 0) throw invalid("meta.k8s.io", "ListOptions", "", causes);
}

export function listObjects(
  ctx: RestContext,
  def: ResourceDef,
  namespace: string,
  query: ListQuery,
  options: { encoded?: boolean } = {},
): ListPage {
  validateListQuery(query);
  const prefix = collectionPrefix(def, namespace);
  const matcher = selectorsFor(def, query);
  // Without selectors, an item whose stored text already starts as its output form does
  // (forOutput puts apiVersion and kind first) is its output text: splice it, decode nothing.
  const selecting = (query.labelSelector ?? "").trim() !== "" || (query.fieldSelector ?? "").trim() !== "";
  let encoded: string[] | undefined = options.encoded && !selecting ? [] : undefined;
  const head = outputHead(def);
  const limit = parseLimit(query.limit);
  let revision: number | undefined;
  let startAfter: string | undefined;
  if (query.continueToken) {
    if (query.resourceVersion) {
      throw badRequest("specifying resource version is not allowed when using continue");
    }
    const position = decodeContinue(query.continueToken, prefix);
    revision = position.revision;
    startAfter = position.startAfter;
  } else if (query.resourceVersion && query.resourceVersionMatch === "Exact") {
    revision = requireKnownRevision(ctx, parseResourceVersion(query.resourceVersion));
  } else if (query.resourceVersion) {
    requireKnownRevision(ctx, parseResourceVersion(query.resourceVersion));
  }
  const items: KubeObject[] = [];
  const count = (): number => items.length + (encoded?.length ?? 0);
  const finish = (page: ListPage): ListPage => {
    if (encoded) page.encodedItems = encoded;
    return page;
  };
  try {
    for (;;) {
      const want = limit > 0 ? limit - count() : 0;
      const page = ctx.store.list({
        prefix,
        ...(want > 0 ? { limit: want } : {}),
        ...(startAfter !== undefined ? { startAfter } : {}),
        ...(revision !== undefined ? { revision } : {}),
      });
      revision = page.revision;
      for (const item of page.items) {
        if (encoded && item.json?.startsWith(head)) {
          encoded.push(item.json);
          continue;
        }
        if (encoded) {
          // An item in another form: decode what was spliced so far and go on decoding.
          for (const text of encoded) items.push(JSON.parse(text) as KubeObject);
          encoded = undefined;
        }
        if (matcher(item.object)) items.push(forOutput(def, item.object));
      }
      if (page.continueKey === undefined) return finish({ items, revision });
      if (limit > 0 && count() >= limit) {
        const result: ListPage = {
          items,
          revision,
          continueToken: encodeContinue({ revision, startAfter: page.continueKey }),
        };
        if (page.remaining !== undefined && !query.labelSelector && !query.fieldSelector) {
          result.remainingItemCount = page.remaining;
        }
        return finish(result);
      }
      startAfter = page.continueKey;
    }
  } catch (error) {
    if (error instanceof StoreError && error.reason === "Gone") {
      if (query.continueToken) {
        throw expired(
          "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        );
      }
      throw expired(`too old resource version: ${revision ?? 0} (${ctx.store.compactedRevision()})`);
    }
    throw error;
  }
}
