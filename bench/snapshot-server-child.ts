// The API server of `npm run bench:snapshot`, as its own process (as bench/apiserver/server-child.ts)
// plus what that bench needs to put the snapshot components against their client-side QPS bound:
// every request counted by user agent, then by verb, resource and response code, from the
// server's audit events, served as JSON at GET <countsUrl> on loopback. Usage: node bench/snapshot-server-child.ts STATE_DIR. Prints
// `{"url", "kubeconfig", "countsUrl"}` on stdout once listening; stops on SIGTERM/SIGINT or when
// stdin closes.

import { createServer } from "node:http";
import { Logger } from "../src/base/index.ts";
import { createBuiltinRegistry, startApiServer } from "../src/apiserver/index.ts";

const stateDir = process.argv[2];
if (stateDir === undefined || stateDir === "") {
  process.stderr.write("usage: snapshot-server-child.ts STATE_DIR\n");
  process.exit(2);
}

const controller = new AbortController();
const stop = (): void => controller.abort();
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();

/** Requests by user agent (its product, before any "/"), then by "verb resource[/subresource] code". */
const counts: Record<string, Record<string, number>> = {};
const handle = await startApiServer(
  {
    stateDir,
    port: 0,
    registry: createBuiltinRegistry(),
    logger: new Logger({ verbosity: 0 }),
    compactionWindow: 1_000_000,
    audit: (event) => {
      const agent = (event.userAgent ?? "").split("/")[0] || "unknown";
      const ref = event.objectRef;
      const what = ref ? `${ref.resource}${ref.subresource ? `/${ref.subresource}` : ""}` : event.requestURI;
      const key = `${event.verb} ${what} ${event.responseStatus.code}`;
      const byKey = (counts[agent] ??= {});
      byKey[key] = (byKey[key] ?? 0) + 1;
    },
  },
  controller.signal,
);
const countsServer = createServer((_req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(counts));
});
await new Promise<void>((resolve) => countsServer.listen(0, "127.0.0.1", resolve));
const port = (countsServer.address() as { port: number }).port;
process.stdout.write(
  JSON.stringify({
    url: handle.url,
    kubeconfig: handle.kubeconfigPath,
    countsUrl: `http://127.0.0.1:${port}/`,
  }) + "\n",
);
await handle.stopped;
countsServer.close();
process.stdin.pause();
