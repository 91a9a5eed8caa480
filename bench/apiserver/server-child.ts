// The API server under benchmark, as its own process so the client load never shares an event
// loop with it. Usage: node bench/apiserver/server-child.ts STATE_DIR. Prints one JSON line
// `{"url": ..., "kubeconfig": ...}` on stdout once listening; stops cleanly on SIGTERM/SIGINT
// or when stdin closes, so it cannot outlive a parent that died without signalling it.

import { Logger } from "../../src/base/index.ts";
import { createBuiltinRegistry, startApiServer } from "../../src/apiserver/index.ts";

const stateDir = process.argv[2];
if (stateDir === undefined || stateDir === "") {
  process.stderr.write("usage: server-child.ts STATE_DIR\n");
  process.exit(2);
}

const controller = new AbortController();
const stop = (): void => controller.abort();
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();

const handle = await startApiServer(
  {
    stateDir,
    port: 0,
    registry: createBuiltinRegistry(),
    logger: new Logger({ verbosity: 0 }),
    // The watch fan-out starts from a revision many thousand writes old; keep it replayable.
    compactionWindow: 1_000_000,
  },
  controller.signal,
);
process.stdout.write(JSON.stringify({ url: handle.url, kubeconfig: handle.kubeconfigPath }) + "\n");
await handle.stopped;
process.stdin.pause();
