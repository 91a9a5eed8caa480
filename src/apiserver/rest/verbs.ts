// One function per REST verb (watch aside, it streams): read the request's parameters and
// body, call the verb in rest*.ts, shape the answer (List or Table). The handler picks one by
// the routed verb; every function returns the status code and body to send.

import type { IncomingMessage } from "node:http";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { checkDecodedDepth, decodeJson, decodeObjectBody, mediaType, readBody } from "../transport/http.ts";
import type { WireFormat } from "../encoding/negotiation.ts";
import { decodeProtobufObject, encodeProtobufList, PROTOBUF_MEDIA_TYPE } from "../encoding/protobuf.ts";
import {
  bindPod,
  createObject,
  deleteCollection,
  deleteObject,
  getObject,
  listObjects,
  parseDeleteOptions,
  parseFieldValidation,
  patchObject,
  updateObject,
  type ListQuery,
  type RestContext,
  type RestResult,
  type Target,
  type WriteOptions,
} from "./rest.ts";
import type { ResourceRequest, Verb } from "../transport/routing.ts";
import { badRequest, methodNotAllowed } from "../transport/status.ts";
import { toTable, type IncludeObject } from "../encoding/table.ts";
import { CsikitError } from "../../base/index.ts";
import { scanGoJson } from "./go-json.ts";
import { getScale, patchScale, updateScale } from "./scale.ts";

export interface VerbCall {
  ctx: RestContext;
  def: ResourceDef;
  request: ResourceRequest;
  target: Target;
  query: URLSearchParams;
  req: IncomingMessage;
  /** ms since epoch, for Table ages. */
  now: number;
  /** Collected for the response's Warning headers. */
  warnings: string[];
  /** Set when the client asked for a meta.k8s.io/v1 Table. */
  table: { include: IncludeObject } | undefined;
  /** The response's negotiated format (negotiation.ts). */
  format: WireFormat;
  /** Whether the kind has a protobuf form (built-in kinds): protobuf bodies are taken. */
  protobuf: boolean;
  /** Set when the client asked for PartialObjectMetadata(List) (partial-metadata.ts). */
  partial?: "PartialObjectMetadata" | "PartialObjectMetadataList";
}

/**
 * The object of a create/update body. Protobuf fields the message does not define are what
 * unknown JSON fields are to fieldValidation: 400 when Strict, a warning when Warn.
 */
export async function objectBody(call: VerbCall, options: WriteOptions): Promise<unknown> {
  const unknownFields: string[] = [];
  const raw = await readBody(call.req);
  const contentType = call.req.headers["content-type"];
  const body = decodeObjectBody(raw, contentType, { protobuf: call.protobuf, unknownFields });
  // JSON.parse keeps the last of repeated keys silently; strict decoding names them.
  const type = mediaType(contentType);
  if (options.fieldValidation !== "Ignore" && (type === "" || type === "application/json")) {
    options.duplicateFields = scanGoJson(raw).duplicates;
  }
  if (unknownFields.length > 0 && options.fieldValidation !== "Ignore") {
    const messages = unknownFields.map((path) => `unknown field "${path}"`);
    if (options.fieldValidation === "Strict")
      throw badRequest(`strict decoding error: ${messages.join(", ")}`);
    call.warnings.push(...messages);
  }
  return body;
}

/**
 * A DeleteOptions body: JSON, or protobuf from a client whose content type is protobuf
 * (client-go sends the options in its configured encoding). Empty means none.
 */
export function optionsBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  if (mediaType(contentType) === PROTOBUF_MEDIA_TYPE) {
    const decoded = decodeProtobufObject(raw);
    if (decoded === undefined) throw badRequest("the protobuf body is not a DeleteOptions");
    return checkDecodedDepth(decoded);
  }
  return decodeJson(raw);
}

export function listQuery(query: URLSearchParams): ListQuery {
  return {
    labelSelector: query.get("labelSelector"),
    fieldSelector: query.get("fieldSelector"),
    limit: query.get("limit"),
    continueToken: query.get("continue"),
    resourceVersion: query.get("resourceVersion"),
    resourceVersionMatch: query.get("resourceVersionMatch"),
    sendInitialEvents: query.get("sendInitialEvents"),
  };
}

function dryRunOf(query: URLSearchParams): boolean {
  const values = query.getAll("dryRun");
  for (const value of values) {
    if (value !== "All") throw badRequest(`dryRun: Unsupported value: "${value}": supported values: "All"`);
  }
  return values.length > 0;
}

function writeOptions(call: VerbCall): WriteOptions {
  return {
    dryRun: dryRunOf(call.query),
    fieldValidation: parseFieldValidation(call.query.get("fieldValidation")),
    warnings: call.warnings,
  };
}

async function get(call: VerbCall): Promise<RestResult> {
  call.req.resume();
  const { def, target } = call;
  if (target.subresource === "scale") return getScale(call.ctx, target);
  if (target.subresource !== "" && target.subresource !== "status") {
    throw methodNotAllowed(def.group, `${def.resource}/${target.subresource}`, "get");
  }
  const result = getObject(call.ctx, target, {
    encoded: call.format === "json" && call.table === undefined && call.partial === undefined,
    resourceVersion: call.query.get("resourceVersion"),
  });
  if (!call.table || result.body.kind === "Status") return result;
  const object = result.body as KubeObject;
  return { code: 200, body: toTable({ def, objects: [object], include: call.table.include, now: call.now }) };
}

async function list(call: VerbCall): Promise<RestResult> {
  call.req.resume();
  const { def } = call;
  const page = listObjects(call.ctx, def, call.target.namespace, listQuery(call.query), {
    encoded: call.table === undefined && call.partial === undefined,
  });
  const metadata: Record<string, unknown> = { resourceVersion: String(page.revision) };
  if (page.continueToken) metadata.continue = page.continueToken;
  if (page.remainingItemCount !== undefined) metadata.remainingItemCount = page.remainingItemCount;
  if (call.table) {
    const table = toTable({
      def,
      objects: page.items,
      include: call.table.include,
      now: call.now,
      listMeta: metadata,
    });
    return { code: 200, body: table };
  }
  const apiVersion = def.group === "" ? def.version : `${def.group}/${def.version}`;
  if (page.encodedItems && call.format === "protobuf") {
    const body = { apiVersion, kind: def.listKind, metadata, items: [] };
    return {
      code: 200,
      body,
      bytes: encodeProtobufList(apiVersion, def.listKind, metadata, page.encodedItems),
    };
  }
  if (page.encodedItems) {
    const body = { apiVersion, kind: def.listKind, metadata, items: [] };
    // Pieces, not one string: a large list is then written a slice at a time (http.ts).
    const items = page.encodedItems;
    const encoded: string[] = new Array<string>(items.length + 2);
    encoded[0] =
      `{"apiVersion":${JSON.stringify(apiVersion)},"kind":${JSON.stringify(def.listKind)},` +
      `"metadata":${JSON.stringify(metadata)},"items":[`;
    for (let i = 0; i < items.length; i++) encoded[i + 1] = i === 0 ? items[i]! : "," + items[i]!;
    encoded[items.length + 1] = "]}";
    return { code: 200, body, encoded };
  }
  return { code: 200, body: { apiVersion, kind: def.listKind, metadata, items: page.items } };
}

async function create(call: VerbCall): Promise<RestResult> {
  const options = writeOptions(call);
  const body = await objectBody(call, options);
  const { def, target } = call;
  if (target.subresource === "binding" && def.group === "" && def.resource === "pods") {
    return bindPod(call.ctx, target, body, options);
  }
  if (target.name !== "" || target.subresource !== "")
    throw methodNotAllowed(def.group, def.resource, "create");
  return createObject(call.ctx, def, target.namespace, body, options);
}

async function update(call: VerbCall): Promise<RestResult> {
  const options = writeOptions(call);
  const body = await objectBody(call, options);
  if (call.target.subresource === "scale") return updateScale(call.ctx, call.target, body, options);
  return updateObject(call.ctx, call.target, body, options);
}

async function patch(call: VerbCall): Promise<RestResult> {
  const options = writeOptions(call);
  const contentType = mediaType(call.req.headers["content-type"]);
  const raw = await readBody(call.req);
  if (raw.length === 0) throw badRequest("the body of the request is empty; expected a patch");
  // Server-side apply bodies are YAML; patchObject refuses them with 415 before reading.
  // Patches are JSON-bodied (apply YAML is parsed later); any other type, protobuf included,
  // is left undecoded for patchObject's 415 listing the patch types, as upstream.
  const body = contentType.endsWith("json") ? decodeJson(raw) : undefined;
  if (call.target.subresource === "scale")
    return patchScale(call.ctx, call.target, { contentType, body }, options);
  return patchObject(call.ctx, call.target, { contentType, body }, options);
}

async function deleteOne(call: VerbCall): Promise<RestResult> {
  const raw = await readBody(call.req);
  const options = parseDeleteOptions(optionsBody(raw, call.req.headers["content-type"]), call.query);
  dryRunOf(call.query);
  return deleteObject(call.ctx, call.target, options);
}

async function deleteMany(call: VerbCall): Promise<RestResult> {
  const raw = await readBody(call.req);
  const options = parseDeleteOptions(optionsBody(raw, call.req.headers["content-type"]), call.query);
  dryRunOf(call.query);
  return deleteCollection(call.ctx, call.def, call.target.namespace, listQuery(call.query), options);
}

async function watchNotHere(): Promise<RestResult> {
  throw new CsikitError(
    "CSIKIT_ERR_INTERNAL",
    "watch is streamed by serveWatch, not answered by a verb function",
  );
}

export const VERBS: Readonly<Record<Verb, (call: VerbCall) => Promise<RestResult>>> = {
  get,
  list,
  watch: watchNotHere,
  create,
  update,
  patch,
  delete: deleteOne,
  deletecollection: deleteMany,
};
