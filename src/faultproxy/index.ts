// `csikit fault-proxy`'s library: a wire-transparent CSI proxy between a CO and a driver that
// injects faults by rule (latency, a gRPC code, a timeout, a hang, a dropped connection, the
// proxy's exit), set by flags or at run time over a loopback HTTP API.
export { startFaultProxy, grpcTimeoutMs, type FaultProxy, type FaultProxyOptions } from "./proxy.ts";
export { startFaultApi, parseLoopbackAddress, type FaultApi } from "./api.ts";
export { FaultRules, type RuleStatus, type Decision } from "./rule-set.ts";
export {
  ACTIONS,
  INJECTED_MESSAGE,
  formatRule,
  matchesMethod,
  parseRuleJson,
  parseRuleSpec,
  type FaultAction,
  type FaultRule,
} from "./rules.ts";
