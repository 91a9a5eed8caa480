// The GET probe of the disk suite in a process of its own, as a client of a real cluster is:
// the latency it times is the server's, not the wait of a bench event loop that also drives 16
// writers (their responses, TLS and JSON). Reads one JSON line on stdin {url, token, ca, path,
// count}, warms one keep-alive socket, prints "ready"; on the line "go" runs `count` sequential
// GETs of `path` and prints {seconds, samples} (ms per GET) as one JSON line, then exits.

import { createInterface } from "node:readline";
import { RawClient } from "./raw-client.ts";
import { runBounded } from "../stats.ts";

interface Config {
  url: string;
  token: string;
  ca: string;
  path: string;
  count: number;
}

const lines = createInterface({ input: process.stdin });
const next = (): Promise<string> =>
  new Promise((resolve, reject) => {
    lines.once("line", resolve);
    lines.once("close", () => reject(new Error("stdin closed")));
  });

try {
  const config = JSON.parse(await next()) as Config;
  const client = new RawClient({ url: config.url, token: config.token, caCertPem: config.ca, maxSockets: 1 });
  await runBounded(20, 1, async () => void (await client.send("GET", config.path)));
  process.stdout.write("ready\n");
  if ((await next()) !== "go") throw new Error("expected go");
  const result = await runBounded(config.count, 1, async () => void (await client.send("GET", config.path)));
  process.stdout.write(JSON.stringify({ seconds: result.seconds, samples: [...result.samples] }) + "\n");
  process.exit(0);
} catch (error) {
  process.stderr.write(`probe-child: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
