// The watch verb: a chunked HTTP response of newline-delimited JSON events {type, object}, as
// kube-apiserver streams them. resourceVersion unset or "0" first sends the current state as
// synthetic ADDED events, then live changes after that state's revision; a specific
// resourceVersion replays every change after it. Selectors are applied to both the old and the
// new state, so an object that starts or stops matching is seen as ADDED or DELETED (upstream's
// cacher does the same). A compacted start revision yields one ERROR event carrying a 410 Status
// and ends the stream. Bookmarks (allowWatchBookmarks) carry the store's progress revision.
//
// With a protobuf Accept the stream is `application/vnd.kubernetes.protobuf;stream=watch`:
// each event is a 4-byte big-endian length and the bare WatchEvent message, whose object is a
// full "k8s\0" envelope (protobuf.ts).
//
// Fan-out cost and memory: a live change is encoded once per form (JSON object or Table, event
// type, resource) and the same bytes are queued to every watcher that wants that form; the
// queues are written in coalesced batches by one shared timer (watch-flush.ts), so N watchers
// cost N socket writes per batch rather than per event. Live events are queued without waiting
// for the client; a watch whose unsent bytes (queued or in the socket) exceed
// `maxPendingBytes` is ended the way kube-apiserver's cacher ends a watcher that cannot keep up
// ("Forcing watcher close due to unresponsiveness"): the stream is cut, its buffers are freed,
// and the client watches again from its last resourceVersion (or relists on 410).

import type { ServerResponse } from "node:http";
import type { Clock, Logger } from "../../base/index.ts";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { StoreError, type StoreEvent, type Watch } from "../storage/index.ts";
import { apiVersionOf, collectionPrefix, forOutput, outputHead } from "./objects.ts";
import {
  listObjects,
  parseResourceVersion,
  requireKnownRevision,
  selectorsFor,
  type RestContext,
} from "./rest.ts";
import { ApiError, badRequest, tooOldResourceVersion } from "../transport/status.ts";
import { toTable, type IncludeObject } from "../encoding/table.ts";
import { PROTOBUF_WATCH_MEDIA_TYPE, type WireFormat } from "../encoding/negotiation.ts";
import { encodeProtobufWatchEvent } from "../encoding/protobuf.ts";
import { CoalescedWriter } from "./watch-flush.ts";
import { asPartialObjectMetadata } from "../encoding/partial-metadata.ts";

export interface WatchRequest {
  def: ResourceDef;
  namespace: string;
  /** A watch on one object (GET .../<name>?watch=1) filters by name. */
  name: string;
  query: URLSearchParams;
  table?: { include: IncludeObject };
  /** The negotiated stream format; YAML streams as JSON, as upstream (it has no YAML framing). */
  format?: WireFormat;
  /** Events carry PartialObjectMetadata (metadata informers' Accept), not whole objects. */
  partial?: boolean;
}

export interface WatchServeOptions {
  ctx: RestContext;
  clock: Clock;
  logger: Logger;
  bookmarkIntervalMs: number;
  /** Unsent bytes one watch may hold before it is ended as unresponsive. */
  maxPendingBytes: number;
  /** Aborts when the server stops. */
  signal: AbortSignal;
}

interface OutEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: unknown;
}

/** Default bound on one watch's unsent bytes (csikit's own; upstream bounds events, not bytes). */
export const DEFAULT_WATCH_MAX_PENDING_BYTES = 16 * 1024 * 1024;

/**
 * Encoded forms of one live change, shared by every watcher of it. Store events of live changes
 * are one object per change (the store hands the same object to every watch), so a WeakMap
 * keyed by it lives exactly as long as some watcher still holds the change.
 */
const sharedEncodings = new WeakMap<StoreEvent, Map<string, Buffer>>();

function encodedOnce(event: StoreEvent, form: string, encode: () => Buffer): Buffer {
  let forms = sharedEncodings.get(event);
  if (!forms) {
    forms = new Map();
    sharedEncodings.set(event, forms);
  }
  let bytes = forms.get(form);
  if (!bytes) {
    bytes = encode();
    forms.set(form, bytes);
  }
  return bytes;
}

/** Watches ended for falling more than maxPendingBytes behind, since the process started. */
let terminatedWatchers = 0;
export function terminatedWatcherCount(): number {
  return terminatedWatchers;
}

/** Open watch streams of this process, for pendingWatchBytes. */
const openWriters = new Set<CoalescedWriter>();

/** Bytes queued for open watch streams and not yet sent, summed over the process's watches. */
export function pendingWatchBytes(): number {
  let total = 0;
  for (const writer of openWriters) total += writer.pendingBytes();
  return total;
}

/** Validates the watch parameters; throws ApiError before any byte of the response is written. */
export function parseWatchStart(request: WatchRequest): {
  fromRevision: number | undefined;
  initialEvents: boolean;
} {
  const rv = request.query.get("resourceVersion") ?? "";
  const sendInitial = request.query.get("sendInitialEvents");
  if (sendInitial === "true") {
    if (
      request.query.get("resourceVersionMatch") !== "NotOlderThan" ||
      request.query.get("allowWatchBookmarks") !== "true"
    ) {
      throw new ApiError(
        422,
        "Invalid",
        `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`,
      );
    }
    return {
      fromRevision: rv === "" || rv === "0" ? undefined : parseResourceVersion(rv),
      initialEvents: true,
    };
  }
  if (rv === "" || rv === "0") return { fromRevision: undefined, initialEvents: sendInitial !== "false" };
  return { fromRevision: parseResourceVersion(rv), initialEvents: false };
}

function timeoutOf(query: URLSearchParams): number | undefined {
  const text = query.get("timeoutSeconds");
  if (text === null || text === "") return undefined;
  const seconds = Number(text);
  if (!Number.isInteger(seconds) || seconds < 0) throw badRequest(`invalid timeoutSeconds: "${text}"`);
  return seconds === 0 ? undefined : seconds;
}

export async function serveWatch(
  request: WatchRequest,
  response: ServerResponse,
  options: WatchServeOptions,
): Promise<void> {
  const { def, query } = request;
  const { ctx } = options;
  const start = parseWatchStart(request);
  const timeoutSeconds = timeoutOf(query);
  const selector = selectorsFor(def, {
    labelSelector: query.get("labelSelector"),
    fieldSelector: query.get("fieldSelector"),
  });
  const matcher =
    request.name === "" ? selector : (o: KubeObject) => o.metadata?.name === request.name && selector(o);
  // Without a selector every change passes as it is: no per-watcher matching (nor decoding).
  const selecting =
    request.name !== "" ||
    (query.get("labelSelector") ?? "").trim() !== "" ||
    (query.get("fieldSelector") ?? "").trim() !== "";
  const bookmarks = query.get("allowWatchBookmarks") === "true";

  // Initial state first (a list at the latest revision), validated before the headers go out.
  let initial: KubeObject[] = [];
  let fromRevision: number;
  if (start.fromRevision === undefined) {
    const page = listObjects(ctx, def, request.namespace, {
      labelSelector: query.get("labelSelector"),
      fieldSelector: query.get("fieldSelector"),
      limit: null,
      continueToken: null,
      resourceVersion: null,
      resourceVersionMatch: null,
    });
    initial = start.initialEvents ? page.items.filter(matcher) : [];
    fromRevision = page.revision;
    // The initial state may hold writes of the open batch: show it once they are durable.
    await ctx.store.whenDurable(fromRevision);
  } else {
    // A compacted start is answered with 200 and one ERROR event (below), as upstream does.
    fromRevision = requireKnownRevision(ctx, start.fromRevision);
  }

  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  options.signal.addEventListener("abort", onAbort, { once: true });
  response.on("close", onAbort);
  const cancelTimeout =
    timeoutSeconds !== undefined ? options.clock.setTimer(timeoutSeconds * 1000, onAbort) : () => {};

  const protobuf = request.format === "protobuf" && !request.table;
  const contentType = protobuf ? PROTOBUF_WATCH_MEDIA_TYPE : "application/json";
  /** One event's bytes on the wire: a JSON line or a length-prefixed protobuf frame. */
  const frame = (event: OutEvent): Buffer =>
    protobuf
      ? encodeProtobufWatchEvent(event.type, event.object as Record<string, unknown>)
      : Buffer.from(JSON.stringify(event) + "\n");
  response.writeHead(200, { "Content-Type": contentType, "Cache-Control": "no-cache, private" });
  const writer = new CoalescedWriter(response);
  openWriters.add(writer);
  response.flushHeaders();
  let first = true;
  const encode = (type: OutEvent["type"], object: KubeObject): OutEvent => {
    if (type === "BOOKMARK" || type === "ERROR") return { type, object };
    if (request.partial) return { type, object: asPartialObjectMetadata(object) };
    if (!request.table) return { type, object };
    const table = toTable({
      def,
      objects: [object],
      include: request.table.include,
      now: options.clock.now(),
      withColumns: first,
    });
    first = false;
    return { type, object: table };
  };
  // The form a live event's bytes depend on besides the change itself; a Table's first event
  // carries the column definitions, so it is this watch's own.
  // The strings are built once per watch, not per event.
  const formSuffix = request.table
    ? ` table ${request.table.include} ${def.group}/${def.version}/${def.resource}`
    : ` ${protobuf ? "protobuf" : "json"}${request.partial ? " partial" : ""} ${def.group}/${def.version}/${def.resource}`;
  const forms = new Map<string, string>();
  const formOf = (type: OutEvent["type"]): string | undefined => {
    if (request.table && first) return undefined;
    let form = forms.get(type);
    if (form === undefined) forms.set(type, (form = type + formSuffix));
    return form;
  };
  // A JSON line of the whole object can splice the stored text when it is the output form.
  const splices = !protobuf && !request.table && !request.partial;
  const head = outputHead(def);
  // The object sent is always the change's new state (`event.object`), read only if needed.
  const sendLive = (event: StoreEvent, type: OutEvent["type"]): void => {
    if (stop.signal.aborted) return;
    const form = formOf(type);
    const line = (): Buffer =>
      splices && event.json?.startsWith(head)
        ? Buffer.from(`{"type":"${type}","object":${event.json}}\n`)
        : frame(encode(type, forOutput(def, event.object)));
    writer.enqueue(form === undefined ? line() : encodedOnce(event, form, line));
    // Past the bound a live watch is cut; a replay below it only waits (history costs no memory
    // while it waits: the store reads it page by page).
    if (writer.exceeds(options.maxPendingBytes)) {
      const pending = writer.pendingBytes();
      terminatedWatchers++;
      options.logger.info(1, "Forcing watcher close due to unresponsiveness", {
        resource: `${def.resource}${def.group === "" ? "" : "." + def.group}`,
        namespace: request.namespace,
        pendingBytes: pending,
        maxPendingBytes: options.maxPendingBytes,
      });
      stop.abort();
      writer.discard();
      // Cut the stream and free what it buffered: waiting for a stalled client is what the
      // bound exists to avoid. The client sees the watch end and watches again.
      response.destroy();
    }
  };
  const send = async (event: OutEvent): Promise<void> => {
    if (stop.signal.aborted) return;
    if (!writer.writeNow(frame(event))) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          response.off("drain", done);
          stop.signal.removeEventListener("abort", done);
          resolve();
        };
        response.on("drain", done);
        stop.signal.addEventListener("abort", done, { once: true });
      });
    }
  };

  let watch: Watch | undefined;
  let cancelBookmarks = (): void => {};
  try {
    for (const object of initial) await send(encode("ADDED", object));
    if (start.initialEvents && query.get("sendInitialEvents") === "true") {
      await send({ type: "BOOKMARK", object: bookmarkObject(def, fromRevision, true, request.partial) });
    }
    if (stop.signal.aborted) return;
    watch = ctx.store.watch(collectionPrefix(def, request.namespace), fromRevision);
    const activeWatch = watch;
    stop.signal.addEventListener("abort", () => activeWatch.close(), { once: true });
    if (bookmarks)
      cancelBookmarks = scheduleBookmarks(
        options,
        activeWatch,
        def,
        (e) => send(e),
        stop.signal,
        request.partial === true,
      );
    // Live events never wait for the client: their unsent bytes are bounded instead (above).
    // Once caught up, the watch follows the store synchronously: one call per change, no
    // promise or iterator step per watcher and event (what the fan-out cost is made of).
    // It runs inside the store's publish: a failure here must end this watch only.
    const onLive = (event: StoreEvent): void => {
      try {
        if (!selecting) {
          sendLive(event, event.type);
          return;
        }
        const out = translate(event, matcher);
        if (out) sendLive(event, out.type);
      } catch (error) {
        options.logger.error("watch event could not be sent; ending the watch", {
          resource: def.resource,
          namespace: request.namespace,
          err: error instanceof Error ? error.message : String(error),
        });
        stop.abort();
        response.destroy();
      }
    };
    const events = activeWatch[Symbol.asyncIterator]();
    while (!stop.signal.aborted) {
      const following = activeWatch.follow?.(onLive);
      if (following) {
        await following;
        break;
      }
      const next = await events.next();
      if (next.done) break;
      const event = next.value;
      const out = translate(event, matcher);
      if (out && activeWatch.replaying()) await send(encode(out.type, forOutput(def, out.object)));
      else if (out) sendLive(event, out.type);
    }
  } catch (error) {
    if (error instanceof StoreError && error.reason === "Gone") {
      const status = tooOldResourceVersion(fromRevision, ctx.store.compactedRevision()).toStatus();
      await send({ type: "ERROR", object: status });
    } else {
      throw error;
    }
  } finally {
    cancelBookmarks();
    cancelTimeout();
    watch?.close();
    options.signal.removeEventListener("abort", onAbort);
    response.off("close", onAbort);
    stop.abort();
    openWriters.delete(writer);
    // Events queued before the end still go out (a timeout or server stop is not a failure).
    writer.flush();
    if (!response.writableEnded) response.end();
  }
}

/** Applies the selector to both sides of a change, as upstream's watch filtering does. */
function translate(
  event: StoreEvent,
  matches: (o: KubeObject) => boolean,
): { type: OutEvent["type"]; object: KubeObject } | undefined {
  if (event.type === "ADDED")
    return matches(event.object) ? { type: "ADDED", object: event.object } : undefined;
  if (event.type === "DELETED") {
    return matches(event.previous ?? event.object) || matches(event.object)
      ? { type: "DELETED", object: event.object }
      : undefined;
  }
  const now = matches(event.object);
  const before = event.previous ? matches(event.previous) : now;
  if (now && before) return { type: "MODIFIED", object: event.object };
  if (now) return { type: "ADDED", object: event.object };
  if (before) return { type: "DELETED", object: event.object };
  return undefined;
}

/** A BOOKMARK's object; a metadata watch gets it as PartialObjectMetadata, as every other event. */
function bookmarkObject(
  def: ResourceDef,
  revision: number,
  initialEventsEnd: boolean,
  partial = false,
): KubeObject {
  const metadata: Record<string, unknown> = { resourceVersion: String(revision) };
  if (initialEventsEnd) metadata.annotations = { "k8s.io/initial-events-end": "true" };
  const object = { kind: def.kind, apiVersion: apiVersionOf(def), metadata };
  return partial ? asPartialObjectMetadata(object) : object;
}

function scheduleBookmarks(
  options: WatchServeOptions,
  watch: Watch,
  def: ResourceDef,
  send: (event: OutEvent) => Promise<void>,
  signal: AbortSignal,
  partial: boolean,
): () => void {
  let cancel = (): void => {};
  let lastSent = -1;
  const tick = (): void => {
    if (signal.aborted) return;
    const revision = watch.progressRevision();
    const next = (): void => {
      cancel = options.clock.setTimer(options.bookmarkIntervalMs, tick);
    };
    if (revision === lastSent) {
      next();
      return;
    }
    lastSent = revision;
    send({ type: "BOOKMARK", object: bookmarkObject(def, revision, false, partial) }).then(next, next);
  };
  cancel = options.clock.setTimer(options.bookmarkIntervalMs, tick);
  return () => cancel();
}
