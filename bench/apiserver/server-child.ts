// The API server under benchmark, as its own process so the client load never shares an event
// loop with it. Usage: node bench/apiserver/server-child.ts STATE_DIR. Prints one JSON line
// `{"url": ..., "kubeconfig": ...}` on stdout once listening; stops cleanly on SIGTERM/SIGINT
// or when stdin closes, so it cannot outlive a parent that died without signalling it.
// With CSIKIT_BENCH_AUDIT_FILE set, every authenticated request is appended to that file as one
// tab-separated line `userAgent verb resource code` (the server-side count of who wrote what).

import { createWriteStream } from "node:fs";
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

const auditFile = process.env["CSIKIT_BENCH_AUDIT_FILE"];
const auditLog = auditFile ? createWriteStream(auditFile, { flags: "a" }) : undefined;

const handle = await startApiServer(
  {
    stateDir,
    port: 0,
    registry: createBuiltinRegistry(),
    logger: new Logger({ verbosity: 0 }),
    // The watch fan-out starts from a revision many thousand writes old; keep it replayable.
    compactionWindow: 1_000_000,
    ...(auditLog
      ? {
          audit: (event) =>
            auditLog.write(
              `${event.userAgent ?? ""}\t${event.verb}\t${event.objectRef?.resource ?? ""}\t${event.responseStatus.code}\n`,
            ),
        }
      : {}),
  },
  controller.signal,
);
process.stdout.write(JSON.stringify({ url: handle.url, kubeconfig: handle.kubeconfigPath }) + "\n");
await handle.stopped;
await new Promise((resolve) => (auditLog ? auditLog.end(resolve) : resolve(undefined)));
process.stdin.pause();
