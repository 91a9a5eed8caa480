// Starts watcher-child.ts against a server: `count` watch streams on `path` in a process of their
// own, as the informers of other components are. Both suites that measure PUTs under fan-out use
// it, so the writer's event loop and TLS work are the writer's alone (see watcher-child.ts).

import { spawn } from "node:child_process";
import { join } from "node:path";
import { PROTOBUF_MEDIA_TYPE } from "../../src/apiserver/encoding/protobuf.ts";
import { processCpuSeconds, type ServerProcess } from "./server-process.ts";

export interface WatcherProcess {
  destroy(): void;
  /** CPU seconds the watcher process has used so far. */
  cpuSeconds(): number;
}

const READY_MS = 60_000;

/** Opens the watches and resolves once every one answered 200 (bounded by READY_MS). */
export async function startWatcherProcess(
  server: ServerProcess,
  path: string,
  count: number,
  format: "json" | "protobuf",
): Promise<WatcherProcess> {
  if (count === 0) return { destroy: () => {}, cpuSeconds: () => 0 };
  const child = spawn(process.execPath, [join(import.meta.dirname, "watcher-child.ts")], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => void (stderr += chunk));
  const watchers: WatcherProcess = {
    destroy: () => {
      child.stdin.end();
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
    cpuSeconds: () => processCpuSeconds(child.pid),
  };
  try {
    child.stdin.write(
      JSON.stringify({
        url: server.url,
        path,
        token: server.token,
        ca: server.caCertPem,
        count,
        accept: format === "protobuf" ? `${PROTOBUF_MEDIA_TYPE}, application/json` : "application/json",
      }) + "\n",
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`watchers not ready in ${READY_MS / 1000} s: ${stderr}`)),
        READY_MS,
      );
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        if (chunk.includes("ready")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`watcher process exited (${code}): ${stderr}`));
      });
    });
    return watchers;
  } catch (error) {
    watchers.destroy();
    throw error;
  }
}
