// Fault rules of `csikit fault-proxy`: what to do to which RPC, and when. A rule names a method
// (`NodePublishVolume`, `/csi.v1.Node/NodePublishVolume`, `Node/*` or `*`), an action (latency,
// code, timeout, hang, drop, exit), whether it acts before the driver sees the call or after the
// driver answered (the response is then lost: the driver did the work, the caller sees the
// fault), and when it fires: on the Nth matching call, at a rate (a seeded draw per matching
// call, so a run replays exactly with the same seed and call order), always, at most `times`.
//
// The flag syntax is `METHOD:ACTION[=VALUE][:OPTION...]`, options `nth=N`, `rate=P`, `times=N`,
// `after` / `before`, and `message=TEXT` last (it takes the rest, colons included), e.g.
//   NodePublishVolume:code=UNAVAILABLE:nth=2
//   CreateVolume:code=DEADLINE_EXCEEDED:after:rate=0.3:message=injected by chaos
//   *:latency=500ms:rate=0.5
// The JSON form (HTTP API, --faults-file) has the same fields by name; either form may carry an
// `id`, else one is assigned.

import { ValidationError, formatDuration, isRecord, parseDuration } from "../base/index.ts";
import { GrpcStatus, statusName } from "../csi/index.ts";

export const ACTIONS = ["latency", "code", "timeout", "hang", "drop", "exit"] as const;
export type FaultAction = (typeof ACTIONS)[number];

export interface FaultRule {
  id: string;
  /** Method name, full path, `Service/*` or `*`. */
  method: string;
  action: FaultAction;
  /** latency: the delay in ms. */
  latencyMs?: number;
  /** code: the gRPC status name (UNAVAILABLE, ...). */
  code?: string;
  /** code: the status message (default names the proxy). */
  message?: string;
  /** exit: the proxy's exit code (default 1). */
  exitCode?: number;
  /** Fire on this matching call only (1 = the first). */
  nth?: number;
  /** Fire with this probability per matching call (0..1). */
  rate?: number;
  /** Fire at most this many times. */
  times?: number;
  /** before: the driver never sees the call; after: it answers, its answer is replaced. */
  when: "before" | "after";
}

/** Default message of an injected code. */
export const INJECTED_MESSAGE = "injected by csikit fault-proxy";

function fail(where: string, message: string): never {
  throw new ValidationError(`${where}: ${message}`);
}

/** gRPC status names to numbers (grpc-js's enum maps both ways; the names are the string keys). */
const CODES: ReadonlyMap<string, number> = new Map(
  Object.entries(GrpcStatus).filter((entry): entry is [string, number] => typeof entry[1] === "number"),
);

function codeName(value: string, where: string): string {
  const upper = value.trim().toUpperCase();
  const name = /^\d+$/.test(upper) ? statusName(Number(upper)) : upper;
  const number = CODES.get(name);
  if (number === undefined || number === 0) {
    fail(
      where,
      `${JSON.stringify(value)} is not a gRPC error code (e.g. UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED)`,
    );
  }
  return name;
}

/** The numeric status of a rule's code. */
export function codeNumber(name: string): number {
  return CODES.get(name) ?? GrpcStatus.UNKNOWN;
}

function positiveInt(value: unknown, where: string): number {
  const number = typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isInteger(number) || number < 1)
    fail(where, `want a whole number >= 1, got ${JSON.stringify(value)}`);
  return number;
}

function probability(value: unknown, where: string): number {
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isFinite(number) || number < 0 || number > 1)
    fail(where, `want a probability from 0 to 1, got ${JSON.stringify(value)}`);
  return number;
}

function methodPattern(value: unknown, where: string): string {
  if (typeof value !== "string" || !/^(\*|\/?[\w.]+\/(\*|\w+)|\w+)$/.test(value.trim())) {
    fail(
      where,
      `want a method (NodePublishVolume, /csi.v1.Node/NodePublishVolume, Node/*, *), got ${JSON.stringify(value)}`,
    );
  }
  return value.trim();
}

/** Checks a rule's fields together (the same for both forms); returns it with defaults. */
function finish(
  rule: Omit<FaultRule, "id"> & { id?: string },
  where: string,
  nextId: () => string,
): FaultRule {
  if (rule.action === "latency" && rule.latencyMs === undefined)
    fail(where, "latency needs a duration (latency=500ms)");
  if (rule.action === "code" && rule.code === undefined)
    fail(where, "code needs a gRPC code (code=UNAVAILABLE)");
  if (rule.nth !== undefined && rule.rate !== undefined) fail(where, "give nth or rate, not both");
  return { ...rule, id: rule.id ?? nextId() };
}

/** A rule from the flag syntax (see the header). */
export function parseRuleSpec(spec: string, nextId: () => string): FaultRule {
  const where = `fault ${JSON.stringify(spec)}`;
  const messageAt = spec.search(/:message=/);
  const head = messageAt < 0 ? spec : spec.slice(0, messageAt);
  const message = messageAt < 0 ? undefined : spec.slice(messageAt + ":message=".length);
  const [methodText = "", actionText = "", ...options] = head.split(":");
  const method = methodPattern(methodText, where);
  const eq = actionText.indexOf("=");
  const actionName = (eq < 0 ? actionText : actionText.slice(0, eq)).trim();
  const value = eq < 0 ? undefined : actionText.slice(eq + 1);
  const action = ACTIONS.find((candidate) => candidate === actionName);
  if (!action) fail(where, `unknown action ${JSON.stringify(actionName)} (one of ${ACTIONS.join(", ")})`);
  const rule: Omit<FaultRule, "id"> & { id?: string } = { method, action, when: "before" };
  if (message !== undefined) rule.message = message;
  if (action === "latency") {
    if (value === undefined) fail(where, "latency needs a duration (latency=500ms)");
    try {
      rule.latencyMs = parseDuration(value);
    } catch {
      fail(where, `latency ${JSON.stringify(value)} is not a duration (e.g. 500ms, 2s)`);
    }
  } else if (action === "code") {
    if (value === undefined) fail(where, "code needs a gRPC code (code=UNAVAILABLE)");
    rule.code = codeName(value, where);
  } else if (action === "exit") {
    if (value !== undefined)
      rule.exitCode = /^\d+$/.test(value)
        ? Number(value)
        : fail(where, `exit code ${JSON.stringify(value)} is not a number`);
  } else if (value !== undefined) {
    fail(where, `${action} takes no value`);
  }
  for (const option of options) {
    const [key = "", optionValue] = option.split("=", 2) as [string, string | undefined];
    if (key === "after" || key === "before") {
      if (optionValue !== undefined) fail(where, `${key} takes no value`);
      rule.when = key;
    } else if (optionValue === undefined)
      fail(
        where,
        `unknown option ${JSON.stringify(key)} (nth=N, rate=P, times=N, after, before, message=TEXT)`,
      );
    else if (key === "nth") rule.nth = positiveInt(optionValue, `${where}: nth`);
    else if (key === "rate") rule.rate = probability(optionValue, `${where}: rate`);
    else if (key === "times") rule.times = positiveInt(optionValue, `${where}: times`);
    else if (key === "id") rule.id = optionValue;
    else
      fail(
        where,
        `unknown option ${JSON.stringify(key)} (nth=N, rate=P, times=N, after, before, message=TEXT)`,
      );
  }
  return finish(rule, where, nextId);
}

const JSON_FIELDS = new Set([
  "id",
  "method",
  "action",
  "latency",
  "code",
  "message",
  "exitCode",
  "nth",
  "rate",
  "times",
  "when",
  "spec",
]);

/** A rule from JSON: the fields by name (latency as a duration text or ms), or {"spec": "..."}. */
export function parseRuleJson(value: unknown, where: string, nextId: () => string): FaultRule {
  if (!isRecord(value) || Array.isArray(value))
    fail(where, "want a rule object ({method, action, ...} or {spec})");
  for (const key of Object.keys(value)) {
    if (!JSON_FIELDS.has(key))
      fail(`${where}.${key}`, `unknown field (fields: ${[...JSON_FIELDS].join(", ")})`);
  }
  if (value.spec !== undefined) {
    if (typeof value.spec !== "string") fail(`${where}.spec`, "want a string");
    const rule = parseRuleSpec(value.spec, nextId);
    return typeof value.id === "string" ? { ...rule, id: value.id } : rule;
  }
  const action = ACTIONS.find((candidate) => candidate === value.action);
  if (!action)
    fail(`${where}.action`, `want one of ${ACTIONS.join(", ")}, got ${JSON.stringify(value.action)}`);
  const rule: Omit<FaultRule, "id"> & { id?: string } = {
    method: methodPattern(value.method, `${where}.method`),
    action,
    when: "before",
  };
  if (value.id !== undefined)
    rule.id =
      typeof value.id === "string" && value.id !== ""
        ? value.id
        : fail(`${where}.id`, "want a non-empty string");
  if (value.when !== undefined)
    rule.when =
      value.when === "after" || value.when === "before"
        ? value.when
        : fail(`${where}.when`, 'want "before" or "after"');
  if (value.latency !== undefined) {
    if (typeof value.latency === "number" && value.latency >= 0) rule.latencyMs = value.latency;
    else if (typeof value.latency === "string") {
      try {
        rule.latencyMs = parseDuration(value.latency);
      } catch {
        fail(`${where}.latency`, `${JSON.stringify(value.latency)} is not a duration (e.g. 500ms)`);
      }
    } else fail(`${where}.latency`, 'want a duration ("500ms") or milliseconds');
  }
  if (value.code !== undefined) {
    if (typeof value.code !== "string" && typeof value.code !== "number")
      fail(`${where}.code`, "want a gRPC code name or number");
    rule.code = codeName(String(value.code), `${where}.code`);
  }
  if (value.message !== undefined)
    rule.message =
      typeof value.message === "string" ? value.message : fail(`${where}.message`, "want a string");
  if (value.exitCode !== undefined) rule.exitCode = positiveInt(value.exitCode, `${where}.exitCode`);
  if (value.nth !== undefined) rule.nth = positiveInt(value.nth, `${where}.nth`);
  if (value.rate !== undefined) rule.rate = probability(value.rate, `${where}.rate`);
  if (value.times !== undefined) rule.times = positiveInt(value.times, `${where}.times`);
  return finish(rule, where, nextId);
}

/** A rule in the compact syntax (for logs and GET). */
export function formatRule(rule: FaultRule): string {
  const value =
    rule.action === "latency"
      ? `=${formatDuration(rule.latencyMs ?? 0)}`
      : rule.action === "code"
        ? `=${rule.code}`
        : rule.action === "exit" && rule.exitCode !== undefined
          ? `=${rule.exitCode}`
          : "";
  const options = [
    rule.nth === undefined ? "" : `:nth=${rule.nth}`,
    rule.rate === undefined ? "" : `:rate=${rule.rate}`,
    rule.times === undefined ? "" : `:times=${rule.times}`,
    rule.when === "after" ? ":after" : "",
    rule.message === undefined ? "" : `:message=${rule.message}`,
  ];
  return `${rule.method}:${rule.action}${value}${options.join("")}`;
}

/** Whether a rule's method pattern covers a call's path ("/csi.v1.Node/NodePublishVolume"). */
export function matchesMethod(pattern: string, path: string): boolean {
  if (pattern === "*") return true;
  const [service = "", method = ""] = path.replace(/^\//, "").split("/");
  const shortService = service.slice(service.lastIndexOf(".") + 1);
  if (!pattern.includes("/")) return pattern === method;
  const [patternService = "", patternMethod = ""] = pattern.replace(/^\//, "").split("/");
  const serviceMatches = patternService === service || patternService === shortService;
  return serviceMatches && (patternMethod === "*" || patternMethod === method);
}
