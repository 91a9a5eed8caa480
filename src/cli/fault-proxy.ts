// `csikit fault-proxy`: a CSI proxy between any CO and any driver that injects faults by rule.
// This file turns flags into rules and options, starts the proxy and its loopback API, and
// ends the process when an `exit` rule fires.

import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { FlagError, errorMessage, type Flags } from "../base/index.ts";
import { parseEndpoint } from "../csi/index.ts";
import {
  ACTIONS,
  FaultRules,
  formatRule,
  parseRuleJson,
  parseLoopbackAddress,
  parseRuleSpec,
  startFaultApi,
  startFaultProxy,
  type FaultRule,
} from "../faultproxy/index.ts";
import type { Command } from "./command.ts";

const SUMMARY =
  "Run a CSI proxy between a CO and a driver that injects faults (latency, codes, timeouts, hangs, drops) by rule";

/**
 * The --fault values: the list flag split them at commas, so a piece that does not start a rule
 * (METHOD:ACTION) is put back onto the one before it (a message may hold commas).
 */
function faultSpecs(values: readonly string[]): string[] {
  const head = new RegExp(`^[\\w./*]+:(${ACTIONS.join("|")})\\b`);
  const specs: string[] = [];
  for (const value of values) {
    if (specs.length > 0 && !head.test(value)) specs[specs.length - 1] += `,${value}`;
    else specs.push(value);
  }
  return specs;
}

async function rulesFromFile(path: string, rules: FaultRules): Promise<FaultRule[]> {
  let data: unknown;
  try {
    data = parseYaml(await readFile(path, "utf8"));
  } catch (error) {
    throw new FlagError(`flag -faults-file: cannot read ${path}: ${errorMessage(error)}`);
  }
  const list = Array.isArray(data) ? data : (data as { rules?: unknown } | null)?.rules;
  if (!Array.isArray(list))
    throw new FlagError(`flag -faults-file: ${path} must hold a list of rules (or {rules: [...]})`);
  return list.map((item: unknown, i) => parseRuleJson(item, `${path}: rules[${i}]`, rules.nextId));
}

function socketFlag(flags: Flags, name: string): string {
  const value = flags.string(name);
  if (value === "") throw new FlagError(`flag -${name} is required`);
  try {
    return parseEndpoint(value);
  } catch (error) {
    throw new FlagError(`flag -${name}: ${errorMessage(error)}`);
  }
}

export const faultProxyCommand: Command = {
  name: "fault-proxy",
  summary: SUMMARY,
  usage: "csikit fault-proxy --listen=/csi/proxy.sock --csi-address=/csi/csi.sock [--fault=RULE ...] [flags]",
  description:
    "Serves --listen and forwards every gRPC call to the driver at --csi-address unchanged (HTTP/2\n" +
    "streams passed through byte for byte: any method, unknown fields and metadata survive; a\n" +
    "cancelled call is cancelled at the driver). A rule injects a fault into the calls it matches:\n" +
    "  METHOD:ACTION[=VALUE][:nth=N|:rate=P][:times=N][:after][:message=TEXT]\n" +
    "METHOD is NodePublishVolume, /csi.v1.Node/NodePublishVolume, Node/* or *. ACTION is\n" +
    "latency=DURATION, code=GRPC_CODE, timeout (held until the caller's deadline, then\n" +
    "DEADLINE_EXCEEDED), hang (never answered), drop (the caller's connection is closed) or\n" +
    "exit[=CODE] (the proxy exits). nth=N fires on the Nth matching call only, rate=P with\n" +
    "probability P per call (seeded: --seed replays a run), times=N at most N times; without\n" +
    "either it fires on every call. `after` lets the driver do the call first and replaces its\n" +
    "answer (the work is done, the caller sees the fault). message= takes the rest of the rule.\n" +
    "Examples: NodePublishVolume:code=UNAVAILABLE:nth=2, CreateVolume:timeout:after:rate=0.3,\n" +
    "*:latency=200ms. Rules change at run time over HTTP on --api-address (loopback only):\n" +
    "GET/PUT/POST/DELETE /rules and GET/PUT/DELETE /rules/{id}, JSON. Each injected fault is\n" +
    'logged ("fault injected", rule, method, call number); request contents are never read.',
  flags: {
    listen: {
      type: "string",
      help: "Socket the proxy serves (give it to the CO as the driver's socket): unix:///path or a path.",
    },
    "csi-address": {
      type: "string",
      help: "The driver's socket the proxy forwards to: unix:///path or a path.",
    },
    fault: {
      type: "strings",
      help: "A fault rule (syntax above); repeat for more. First matching rule that fires wins.",
    },
    "faults-file": {
      type: "string",
      help: "YAML or JSON file with a list of rules ({method, action, code, latency, nth, rate, times, when, message} or {spec}).",
    },
    seed: {
      type: "int",
      help: "Seed of the rate draws (a run with the same seed and calls injects the same faults). Unset = random, logged at start.",
    },
    "api-address": {
      type: "string",
      default: "127.0.0.1:0",
      help: "host:port of the rules API, loopback only (port 0 = any free port, logged at start); empty = no API.",
    },
  },
  async run({ flags, logger, signal }) {
    const listen = socketFlag(flags, "listen");
    const target = socketFlag(flags, "csi-address");
    if (listen === target)
      throw new FlagError("flag -listen: the proxy cannot serve the driver's own socket");
    const apiAddress = flags.string("api-address");
    if (apiAddress !== "") {
      try {
        parseLoopbackAddress(apiAddress);
      } catch (error) {
        throw new FlagError(`flag -api-address: ${errorMessage(error)}`);
      }
    }
    const seed = flags.isSet("seed") ? flags.number("seed") : Math.floor(Math.random() * 2 ** 31);
    const rules = new FaultRules(seed);
    const list: FaultRule[] = [];
    try {
      for (const spec of faultSpecs(flags.strings("fault"))) list.push(parseRuleSpec(spec, rules.nextId));
    } catch (error) {
      throw new FlagError(`flag -fault: ${errorMessage(error)}`);
    }
    if (flags.string("faults-file") !== "")
      list.push(...(await rulesFromFile(flags.string("faults-file"), rules)));
    try {
      rules.replace(list);
    } catch (error) {
      throw new FlagError(errorMessage(error));
    }
    let exitCode: number | undefined;
    const stopped = new AbortController();
    const proxy = await startFaultProxy({
      listen,
      target,
      rules,
      logger,
      onExit: (code) => {
        exitCode = code;
        stopped.abort();
      },
    });
    const api = apiAddress === "" ? undefined : await startFaultApi(apiAddress, rules, logger);
    logger.info(0, "fault proxy serving", {
      listen,
      driver: target,
      seed,
      api: api ? `http://${api.address}/rules` : "off",
      rules: rules.list().map((rule) => `${rule.id}=${formatRule(rule)}`),
    });
    await new Promise<void>((resolve) => {
      if (signal.aborted || stopped.signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
      stopped.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    if (exitCode !== undefined) {
      // An `exit` rule stands for a crash: no graceful close, the socket file stays behind.
      logger.info(0, "fault proxy exiting by rule", { code: exitCode });
      process.exit(exitCode);
    }
    await api?.close();
    await proxy.close();
    return 0;
  },
};
