// Watch streams of the fan-out suite in their own process, as the watchers of a real cluster
// (informers of other components) are: so the writer's event loop measures its PUTs, not the
// work of reading N streams. Reads one JSON line on stdin {url, path, token, ca, count, accept},
// opens `count` watches (25 at a time, so the TLS handshakes do not overflow the listen backlog),
// reads and drops every byte, prints "ready" once all answered 200, and exits when stdin closes.

import { request } from "node:https";
import { createInterface } from "node:readline";

interface Config {
  url: string;
  path: string;
  token: string;
  ca: string;
  count: number;
  accept: string;
}

const lines = createInterface({ input: process.stdin });
const first = await new Promise<string>((resolve) => lines.once("line", resolve));
const config = JSON.parse(first) as Config;
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));

const openOne = (): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const req = request(
      `${config.url}${config.path}`,
      {
        headers: { Accept: config.accept, Authorization: `Bearer ${config.token}` },
        ca: config.ca,
        agent: false,
      },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`watch: HTTP ${res.statusCode}`));
          res.resume();
          return;
        }
        res.on("data", () => {});
        res.on("error", () => {});
        resolve();
      },
    );
    req.on("error", reject);
    req.end();
  });

try {
  for (let opened = 0; opened < config.count; opened += 25) {
    await Promise.all(Array.from({ length: Math.min(25, config.count - opened) }, openOne));
  }
  process.stdout.write("ready\n");
} catch (error) {
  process.stderr.write(`watcher-child: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
