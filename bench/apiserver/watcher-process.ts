// Starts watcher-child.ts against a server: `count` watch streams on `path` in a process of their
// own, as the informers of other components are. Both suites that measure PUTs under fan-out use
// it, so the writer's event loop and TLS work are the writer's alone (see watcher-child.ts).

import { PROTOBUF_MEDIA_TYPE } from "../../src/apiserver/encoding/protobuf.ts";
import { startBenchChild } from "./bench-child.ts";
import { processCpuSeconds, type ServerProcess } from "./server-process.ts";

export interface WatcherProcess {
  destroy(): void;
  /** CPU seconds the watcher process has used so far. */
  cpuSeconds(): number;
}

/** Opens the watches and resolves once every one answered 200 (bounded). */
export async function startWatcherProcess(
  server: ServerProcess,
  path: string,
  count: number,
  format: "json" | "protobuf",
): Promise<WatcherProcess> {
  if (count === 0) return { destroy: () => {}, cpuSeconds: () => 0 };
  const child = await startBenchChild("watcher-child.ts", {
    url: server.url,
    path,
    token: server.token,
    ca: server.caCertPem,
    count,
    accept: format === "protobuf" ? `${PROTOBUF_MEDIA_TYPE}, application/json` : "application/json",
  });
  return { destroy: () => child.destroy(), cpuSeconds: () => processCpuSeconds(child.pid) };
}
