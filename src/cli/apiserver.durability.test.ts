// The API server's durability promise, end to end: every create that got a 201 is there after
// `csikit apiserver` is SIGKILLed mid-stream and restarted on the same state directory, and
// resourceVersions go on increasing. The server runs as a real child process over HTTPS.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { Agent, request } from "node:https";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = new URL("./main.ts", import.meta.url).pathname;
/** Acknowledged creates before the kill: enough that it lands mid-stream. */
const ACKS_BEFORE_KILL = 120;
/** Upper bound of creates sent, so the test stays bounded whatever happens. */
const MAX_CREATES = 300;
/** Requests in flight at once, so the kill finds some unanswered. */
const IN_FLIGHT = 8;

interface Server {
  child: ChildProcess;
  port: number;
}

/** Starts `csikit apiserver` on `stateDir`; resolves once it prints its URL. */
async function startServer(stateDir: string, children: ChildProcess[]): Promise<Server> {
  const child = spawn(process.execPath, [MAIN, "apiserver", "--state-dir", stateDir, "--port", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      const match = /^API server listening on https:\/\/127\.0\.0\.1:(\d+)$/m.exec(stdout);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`apiserver exited early (${code}): ${stderr}`)));
  });
  return { child, port };
}

interface Client {
  agent: Agent;
  token: string;
  ca: Buffer;
}

function call(
  client: Client,
  port: number,
  options: { method: string; path: string; body?: string },
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: options.method,
        path: options.path,
        agent: client.agent,
        ca: client.ca,
        headers: {
          Authorization: `Bearer ${client.token}`,
          Accept: "application/json",
          ...(options.body !== undefined ? { "Content-Type": "application/json" } : {}),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> });
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

function resourceVersionOf(object: Record<string, unknown>): number {
  const meta = object.metadata as Record<string, unknown> | undefined;
  return Number(meta?.resourceVersion);
}

test(
  "every create answered 201 survives SIGKILL of csikit apiserver; resourceVersions keep increasing",
  { timeout: 90_000 },
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "csikit-apiserver-durability-"));
    const children: ChildProcess[] = [];
    t.after(async () => {
      for (const child of children) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGKILL");
          await once(child, "exit");
        }
      }
      await rm(dir, { recursive: true, force: true });
    });
    const stateDir = join(dir, "state");
    const first = await startServer(stateDir, children);
    const client: Client = {
      agent: new Agent({ keepAlive: true, maxSockets: IN_FLIGHT }),
      token: (await readFile(join(stateDir, "pki", "admin.token"), "utf8")).trim(),
      ca: await readFile(join(stateDir, "pki", "ca.crt")),
    };
    t.after(() => client.agent.destroy());

    // Stream creates; each worker records the 201s it got. The kill lands mid-stream.
    const acked = new Map<string, number>();
    let next = 0;
    let killed = false;
    const killedExit = once(first.child, "exit");
    const worker = async (): Promise<void> => {
      while (!killed && next < MAX_CREATES) {
        const name = `durable-${next++}`;
        try {
          const res = await call(client, first.port, {
            method: "POST",
            path: "/api/v1/namespaces/default/configmaps",
            body: JSON.stringify({ metadata: { name }, data: { n: name } }),
          });
          if (res.status === 201) acked.set(name, resourceVersionOf(res.json));
          else assert.fail(`create ${name}: ${res.status} ${JSON.stringify(res.json)}`);
        } catch (error) {
          if (!killed) throw error;
          return; // the connection died with the server: not acknowledged
        }
        if (!killed && acked.size >= ACKS_BEFORE_KILL) {
          killed = true;
          first.child.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    assert.ok(killed, `the stream ended before the kill (${acked.size} acknowledged)`);
    const [, signal] = (await killedExit) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, "SIGKILL");
    assert.ok(acked.size >= ACKS_BEFORE_KILL);

    client.agent.destroy();
    client.agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
    const second = await startServer(stateDir, children);
    const list = await call(client, second.port, {
      method: "GET",
      path: "/api/v1/namespaces/default/configmaps",
    });
    assert.equal(list.status, 200);
    const stored = new Map(
      (list.json.items as Record<string, unknown>[]).map((item) => [
        String((item.metadata as Record<string, unknown>).name),
        item,
      ]),
    );
    for (const [name, revision] of acked) {
      const object = stored.get(name);
      assert.ok(object, `${name} was acknowledged (resourceVersion ${revision}) but is gone`);
      assert.equal(resourceVersionOf(object), revision, `${name} keeps its resourceVersion`);
      assert.deepEqual(object.data, { n: name });
    }
    const maxAcked = Math.max(...acked.values());
    assert.ok(
      resourceVersionOf(list.json) >= maxAcked,
      "list resourceVersion is not behind acknowledged writes",
    );
    const after = await call(client, second.port, {
      method: "POST",
      path: "/api/v1/namespaces/default/configmaps",
      body: JSON.stringify({ metadata: { name: "after-restart" } }),
    });
    assert.equal(after.status, 201, JSON.stringify(after.json));
    assert.ok(
      resourceVersionOf(after.json) > resourceVersionOf(list.json),
      `resourceVersion after restart ${resourceVersionOf(after.json)} <= ${resourceVersionOf(list.json)}`,
    );
    client.agent.destroy();
    second.child.kill("SIGTERM");
    const [code] = (await once(second.child, "exit")) as [number | null];
    assert.equal(code, 0);
  },
);
