// Starts probe-child.ts against a server and hands back a `measure` for the disk suite's
// underLoad: the GETs run in their own process (see probe-child.ts for why).

import { startBenchChild } from "./bench-child.ts";
import type { ServerProcess } from "./server-process.ts";
import type { RunResult } from "../stats.ts";

export interface ProbeProcess {
  /** Runs the child's GETs now; resolves with their latencies. */
  measure(): Promise<RunResult>;
  destroy(): void;
}

export async function startProbeProcess(
  server: ServerProcess,
  path: string,
  count: number,
): Promise<ProbeProcess> {
  const child = await startBenchChild("probe-child.ts", {
    url: server.url,
    token: server.token,
    ca: server.caCertPem,
    path,
    count,
  });
  return {
    async measure() {
      child.write("go\n");
      const result = JSON.parse(await child.line(1, "result")) as { seconds: number; samples: number[] };
      return {
        ops: result.samples.length,
        seconds: result.seconds,
        samples: Float64Array.from(result.samples),
      };
    },
    destroy: () => child.destroy(),
  };
}
