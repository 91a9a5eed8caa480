// The kubelet's streaming endpoints (/containerLogs, /exec over WebSocket and SPDY) served on
// the node's secure port.
export {
  KubeletStreaming,
  parseExecParams,
  parseLogOptions,
  type KubeletStreamingOptions,
} from "./kubelet-streaming.ts";
export type { ExecParams, StreamStatus } from "./remote-command.ts";
