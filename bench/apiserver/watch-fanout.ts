// Watch fan-out: W watchers each hold a `?watch=1&resourceVersion=<rv>` stream on ConfigMaps of
// one namespace while a writer creates E ConfigMaps at a steady pace (bounded in flight). Each
// ConfigMap carries its send time in an annotation, so every (watcher, event) delivery yields a
// latency: receive time − send time (includes the write itself), and receive time − write-ack
// time (the fan-out alone; negative when the event overtook the write's own response). Every
// watcher must see every event exactly once: loss, duplicates, ERROR events and streams that end
// early are counted and reported, never hidden. Times are one clock of this process
// (performance.timeOrigin + performance.now()), so send and receive compare exactly.

import type { ClientRequest } from "node:http";
import { request } from "node:https";
import { decodeProtobufWatchEvent, PROTOBUF_MEDIA_TYPE } from "../../src/apiserver/encoding/protobuf.ts";
import type { RawClient } from "./raw-client.ts";
import { percentile, runBounded, type Summary } from "../stats.ts";

export const SENT_AT_ANNOTATION = "bench.csikit.io/sent-at";
const EVENT_PREFIX = "ev-";

export interface FanoutOptions {
  client: RawClient;
  namespace: string;
  watchers: number;
  events: number;
  /** Target write rate, events per second; 0 = unpaced (as fast as `concurrency` allows). */
  rate: number;
  /** Writes in flight at most. */
  concurrency: number;
  /** Give up waiting once no delivery arrived for this long after the last write. */
  idleTimeoutMs: number;
  /** The watch streams' encoding: JSON lines (default) or length-prefixed protobuf frames. */
  format?: "json" | "protobuf";
}

export interface FanoutResult {
  watchers: number;
  events: number;
  expected: number;
  delivered: number;
  duplicates: number;
  /** Deliveries whose resourceVersion was not above the watcher's previous one. */
  outOfOrder: number;
  /** Watchers whose stream ended or failed before the end, with why. */
  problems: string[];
  writes: Summary;
  /** Receive − send, over all deliveries. */
  fromSend: Summary;
  /** Receive − write ack, over all deliveries. */
  fromAck: Summary;
}

interface WatchedEvent {
  type: string;
  object: {
    metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
    message?: string;
  };
}

const now = (): number => performance.timeOrigin + performance.now();

interface Watcher {
  request: ClientRequest;
  received: number;
  lastRevision: number;
  done: boolean;
}

export async function runWatchFanout(options: FanoutOptions): Promise<FanoutResult> {
  const { client, namespace, watchers: watcherCount, events } = options;
  const expected = watcherCount * events;
  const receivedAt = new Float64Array(expected).fill(Number.NaN);
  const sentAt = new Float64Array(events).fill(Number.NaN);
  const ackAt = new Float64Array(events).fill(Number.NaN);
  const problems: string[] = [];
  let delivered = 0;
  let duplicates = 0;
  let outOfOrder = 0;

  await client.send("POST", "/api/v1/namespaces", { metadata: { name: namespace } });
  const listed = JSON.parse(
    (await client.send("GET", `/api/v1/namespaces/${namespace}/configmaps?limit=1`)).text,
  ) as { metadata: { resourceVersion: string } };
  const path =
    `/api/v1/namespaces/${namespace}/configmaps?watch=1` +
    `&resourceVersion=${encodeURIComponent(listed.metadata.resourceVersion)}`;

  const watchers: Watcher[] = [];
  const opened: Promise<void>[] = [];
  for (let w = 0; w < watcherCount; w++) {
    const base = w * events;
    let pending = "";
    let pendingBytes: Buffer = Buffer.alloc(0);
    const onLine = (line: string, at: number): void => onEvent(JSON.parse(line) as WatchedEvent, at);
    const onEvent = (event: WatchedEvent, at: number): void => {
      if (event.type === "ERROR") {
        problems.push(`watcher ${w}: ERROR event: ${event.object.message ?? ""}`);
        return;
      }
      const name = event.object.metadata?.name ?? "";
      if (event.type !== "ADDED" || !name.startsWith(EVENT_PREFIX)) return;
      const index = Number(name.slice(EVENT_PREFIX.length));
      const watcher = watchers[w]!;
      if (!Number.isInteger(index) || index < 0 || index >= events) return;
      if (!Number.isNaN(receivedAt[base + index]!)) {
        duplicates++;
        return;
      }
      const revision = Number(event.object.metadata?.resourceVersion);
      if (!(revision > watcher.lastRevision)) outOfOrder++;
      watcher.lastRevision = revision;
      receivedAt[base + index] = at;
      // The annotation is the authority for send time; the writer's own record is a cross-check.
      const stamped = Number(event.object.metadata?.annotations?.[SENT_AT_ANNOTATION]);
      if (Number.isFinite(stamped)) sentAt[index] = stamped;
      watcher.received++;
      delivered++;
    };
    opened.push(
      new Promise<void>((resolve, reject) => {
        const stream = client.streamOptions();
        if (options.format === "protobuf") stream.headers.Accept = `${PROTOBUF_MEDIA_TYPE}, application/json`;
        const req = request(`${client.url}${path}`, { method: "GET", ...stream }, (res) => {
          if (res.statusCode !== 200) {
            reject(new Error(`watcher ${w}: HTTP ${res.statusCode ?? 0} for GET ${path}`));
            res.resume();
            return;
          }
          if (options.format === "protobuf") {
            res.on("data", (chunk: Buffer) => {
              const at = now();
              pendingBytes = pendingBytes.length === 0 ? chunk : Buffer.concat([pendingBytes, chunk]);
              while (pendingBytes.length >= 4) {
                const length = pendingBytes.readUInt32BE(0);
                if (pendingBytes.length < 4 + length) break;
                const event = decodeProtobufWatchEvent(pendingBytes.subarray(4, 4 + length));
                pendingBytes = pendingBytes.subarray(4 + length);
                onEvent(event, at);
              }
            });
          } else res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            if (options.format === "protobuf") return;
            const at = now();
            pending += chunk;
            let newline = pending.indexOf("\n");
            while (newline >= 0) {
              const line = pending.slice(0, newline);
              pending = pending.slice(newline + 1);
              if (line.trim() !== "") onLine(line, at);
              newline = pending.indexOf("\n");
            }
          });
          res.on("end", () => {
            const watcher = watchers[w]!;
            if (!watcher.done && watcher.received < events) {
              problems.push(`watcher ${w}: stream ended after ${watcher.received}/${events} events`);
            }
            watcher.done = true;
          });
          resolve();
        });
        req.on("error", (error) => {
          const watcher = watchers[w];
          if (watcher && !watcher.done) problems.push(`watcher ${w}: ${error.message}`);
          if (watcher) watcher.done = true;
          reject(error);
        });
        req.end();
        watchers.push({ request: req, received: 0, lastRevision: -1, done: false });
      }),
    );
  }

  try {
    await Promise.all(opened);

    // Paced writer: event i is due at start + i/rate; at most `concurrency` writes in flight.
    const interval = options.rate > 0 ? 1000 / options.rate : 0;
    const started = performance.now();
    const writes = await runBounded(events, options.concurrency, async (i) => {
      const wait = started + i * interval - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      const sent = now();
      sentAt[i] = sent;
      await client.send("POST", `/api/v1/namespaces/${namespace}/configmaps`, {
        metadata: { name: `${EVENT_PREFIX}${i}`, annotations: { [SENT_AT_ANNOTATION]: String(sent) } },
        data: { index: String(i) },
      });
      ackAt[i] = now();
    });
    // runBounded's per-op time includes the pacing wait: keep only the request itself.
    for (let i = 0; i < events; i++) writes.samples[i] = ackAt[i]! - sentAt[i]!;

    let lastProgress = performance.now();
    let lastDelivered = delivered;
    while (delivered < expected && !watchers.every((w) => w.done)) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (delivered !== lastDelivered) {
        lastDelivered = delivered;
        lastProgress = performance.now();
      } else if (performance.now() - lastProgress > options.idleTimeoutMs) {
        problems.push(
          `gave up after ${options.idleTimeoutMs} ms without a delivery: ${delivered}/${expected} delivered`,
        );
        break;
      }
    }
    // Loops, not Math.max(...): a spread of a million arguments overflows the stack.
    let lastDelivery = Number.NEGATIVE_INFINITY;
    const fromSend = new Float64Array(delivered);
    const fromAck = new Float64Array(delivered);
    let n = 0;
    for (let w = 0; w < watcherCount; w++) {
      for (let i = 0; i < events; i++) {
        const at = receivedAt[w * events + i]!;
        if (Number.isNaN(at)) continue;
        if (at > lastDelivery) lastDelivery = at;
        fromSend[n] = at - sentAt[i]!;
        fromAck[n] = at - ackAt[i]!;
        n++;
      }
    }
    let firstSend = Number.POSITIVE_INFINITY;
    for (const t of sentAt) if (t < firstSend) firstSend = t;
    const deliverySeconds = (lastDelivery - firstSend) / 1000;
    return {
      watchers: watcherCount,
      events,
      expected,
      delivered,
      duplicates,
      outOfOrder,
      problems,
      writes: summarizeSamples(events, writes.seconds, writes.samples),
      fromSend: summarizeSamples(delivered, deliverySeconds, fromSend),
      fromAck: summarizeSamples(delivered, deliverySeconds, fromAck),
    };
  } finally {
    for (const watcher of watchers) {
      watcher.done = true;
      watcher.request.destroy();
    }
  }
}

function summarizeSamples(ops: number, seconds: number, samples: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(samples).sort();
  return {
    ops,
    seconds,
    opsPerSecond: ops / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
  };
}
