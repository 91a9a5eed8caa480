// The components' own endpoints, read as Prometheus reads them: /metrics every few seconds
// (csi_sidecar_operations_seconds per CSI method → operations/s and mean latency between two
// scrapes; workqueue_depth per queue) and /healthz. These are counters on other processes'
// ports, not API objects: sampling them is the only way to see them (objects come by watch).

import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

export interface Endpoint {
  /** Instance name, e.g. "provisioner" or "node-1-livenessprobe". */
  instance: string;
  what: string;
  /** http(s)://127.0.0.1:PORT/metrics */
  url: string;
}

export interface ComponentRow {
  instance: string;
  what: string;
  /** "ok", "unreachable", or the /healthz body when not ok. */
  health: string;
  healthy: boolean;
  scraped: boolean;
}

export interface MethodSample {
  /** "component method" */
  key: string;
  component: string;
  method: string;
  opsPerSecond: number;
  /** Mean latency of the calls between two scrapes, ms (0 without calls). */
  meanMs: number;
  errors: number;
  total: number;
}

export interface MetricsPoint {
  time: number;
  methods: MethodSample[];
  /** "component/queue" → depth */
  queues: Record<string, number>;
}

/** One sample line: name{labels} value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, "$1");
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function get(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const secure = url.startsWith("https:");
    // A loopback secure port with an in-memory self-signed certificate (kube-controller-manager's
    // own): nothing to verify it against, and nothing secret is sent (no credentials).
    const req = (secure ? httpsRequest : httpRequest)(
      url,
      { timeout: timeoutMs, rejectUnauthorized: false },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk.length + body.length > 4 << 20 ? "" : chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });
}

interface Totals {
  count: number;
  sum: number;
  errors: number;
}

/** Scrapes every endpoint each `periodMs`; emits components' health and a metrics point. */
export class MetricsScraper {
  readonly #endpoints: readonly Endpoint[];
  readonly #previous = new Map<string, Totals>();
  #previousTime = 0;
  components: ComponentRow[];
  readonly points: MetricsPoint[] = [];

  constructor(endpoints: readonly Endpoint[]) {
    this.#endpoints = endpoints;
    this.components = endpoints.map((e) => ({
      instance: e.instance,
      what: e.what,
      health: "unknown",
      healthy: false,
      scraped: false,
    }));
  }

  get empty(): boolean {
    return this.#endpoints.length === 0;
  }

  /** One round: every endpoint's /healthz and /metrics in parallel. */
  async scrape(now = Date.now()): Promise<MetricsPoint> {
    const totals = new Map<string, Totals>();
    const queues: Record<string, number> = {};
    this.components = await Promise.all(
      this.#endpoints.map(async (endpoint): Promise<ComponentRow> => {
        const row: ComponentRow = {
          instance: endpoint.instance,
          what: endpoint.what,
          health: "",
          healthy: false,
          scraped: false,
        };
        try {
          const health = await get(endpoint.url.replace(/\/metrics$/, "/healthz"), 2000);
          row.healthy = health.status === 200;
          row.health = row.healthy ? "ok" : `${health.status} ${health.body.trim().slice(0, 200)}`;
        } catch (error) {
          row.health = `unreachable (${(error as Error).message})`;
        }
        try {
          const metrics = await get(endpoint.url, 3000);
          if (metrics.status !== 200) return row;
          row.scraped = true;
          for (const sample of parsePrometheus(metrics.body)) {
            if (sample.name === "workqueue_depth" && sample.labels.name)
              queues[`${endpoint.instance}/${sample.labels.name}`] = sample.value;
            const method = sample.labels.method_name;
            if (!method || !sample.name.startsWith("csi_sidecar_operations_seconds_")) continue;
            // "/csi.v1.Controller/CreateVolume" → "CreateVolume"
            const key = `${endpoint.instance} ${method.slice(method.lastIndexOf("/") + 1)}`;
            const total = totals.get(key) ?? { count: 0, sum: 0, errors: 0 };
            if (sample.name.endsWith("_count")) {
              total.count += sample.value;
              if (sample.labels.grpc_status_code && sample.labels.grpc_status_code !== "OK")
                total.errors += sample.value;
            } else if (sample.name.endsWith("_sum")) total.sum += sample.value;
            totals.set(key, total);
          }
        } catch {
          // health says why
        }
        return row;
      }),
    );
    const seconds = this.#previousTime === 0 ? 0 : (now - this.#previousTime) / 1000;
    const methods: MethodSample[] = [];
    for (const [key, total] of totals) {
      const before =
        this.#previous.get(key) ?? (this.#previousTime === 0 ? total : { count: 0, sum: 0, errors: 0 });
      const calls = Math.max(0, total.count - before.count);
      const [component, method] = key.split(" ") as [string, string];
      methods.push({
        key,
        component,
        method,
        opsPerSecond: seconds > 0 ? calls / seconds : 0,
        meanMs: calls > 0 ? ((total.sum - before.sum) / calls) * 1000 : 0,
        errors: total.errors,
        total: total.count,
      });
    }
    this.#previous.clear();
    for (const [key, total] of totals) this.#previous.set(key, total);
    this.#previousTime = now;
    const point = { time: now, methods: methods.sort((a, b) => a.key.localeCompare(b.key)), queues };
    this.points.push(point);
    if (this.points.length > 120) this.points.shift();
    return point;
  }
}
