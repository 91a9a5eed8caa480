// KubeClient against the real embedded API server: CRUD and errors over the generic transport,
// exec credential plugins, watch, and client-side throttling (counted, never timed).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { FakeClock, settle } from "../base/index.ts";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { KubeClient } from "./client.ts";
import { apiStatusCode, isAlreadyExists, isConflict, isNotFound } from "./errors.ts";
import { loadKubeConfig } from "./kubeconfig.ts";
import { CONFIGMAPS, startTestServer, type TestServer } from "../../test/harness/kube-server.ts";
import type { KubeObject, WatchEvent } from "./types.ts";

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const NAMESPACES = { group: "", version: "v1", resource: "namespaces", namespaced: false } as const;

let env: TestServer;
before(async () => {
  env = await startTestServer();
});
after(async () => {
  await env.stop();
});

const cm = (name: string, data: Record<string, string> = {}): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
  data,
});

test("generic create/get/update/patch/delete with Kubernetes error classes", async () => {
  const client = env.client();
  const created = await client.create(CONFIGMAPS, cm("generic", { a: "1" }));
  assert.ok(created.metadata?.resourceVersion);
  await assert.rejects(client.create(CONFIGMAPS, cm("generic")), (e: unknown) => isAlreadyExists(e));
  const stale = structuredClone(created);
  const updated = await client.update(CONFIGMAPS, { ...created, data: { a: "2" } });
  assert.equal(updated.data?.a, "2");
  await assert.rejects(client.update(CONFIGMAPS, { ...stale, data: { a: "3" } }), (e: unknown) =>
    isConflict(e),
  );
  const patched = await client.patch<ConfigMap>(
    CONFIGMAPS,
    "generic",
    { data: { b: "x" } },
    { namespace: "default" },
  );
  assert.deepEqual(patched.data, { a: "2", b: "x" });
  const list = await client.list<ConfigMap>(CONFIGMAPS, { namespace: "default" });
  assert.ok(list.items.some((i) => i.metadata?.name === "generic"));
  assert.ok(list.metadata?.resourceVersion);
  await client.delete(CONFIGMAPS, "generic", { namespace: "default" });
  await assert.rejects(client.get(CONFIGMAPS, "generic", { namespace: "default" }), (e: unknown) =>
    isNotFound(e),
  );
});

test("request reaches any path with the same credentials and error mapping", async () => {
  const client = env.client();
  const version = await client.request<{ gitVersion?: string }>({ method: "GET", path: "/version" });
  assert.match(version.gitVersion ?? "", /^v1\./);
  await assert.rejects(
    client.request({ method: "GET", path: "/api/v1/namespaces/default/configmaps/nope" }),
    (e: unknown) => isNotFound(e),
  );
});

test("watch streams events from a resourceVersion and ends quietly on abort", async () => {
  const client = env.client();
  const start = await client.list<ConfigMap>(CONFIGMAPS, { namespace: "default" });
  const controller = new AbortController();
  const seen: WatchEvent<ConfigMap>[] = [];
  const watching = (async () => {
    for await (const event of client.watch<ConfigMap>(
      CONFIGMAPS,
      { namespace: "default", resourceVersion: start.metadata?.resourceVersion ?? "" },
      controller.signal,
    )) {
      seen.push(event);
      if (seen.length === 3) controller.abort();
    }
  })();
  await client.create(CONFIGMAPS, cm("w1"));
  await client.patch(CONFIGMAPS, "w1", { data: { k: "v" } }, { namespace: "default" });
  await client.delete(CONFIGMAPS, "w1", { namespace: "default" });
  await watching;
  assert.deepEqual(
    seen.map((e) => [e.type, e.object.metadata?.name]),
    [
      ["ADDED", "w1"],
      ["MODIFIED", "w1"],
      ["DELETED", "w1"],
    ],
  );
});

test("client-side rate limit: burst requests pass, the rest wait for tokens (counted, not timed)", async () => {
  const clock = new FakeClock();
  const client = env.client({ qps: 5, burst: 10, clock });
  let done = 0;
  const requests = Array.from({ length: 13 }, (_, i) =>
    (i % 2 === 0
      ? client.get(CONFIGMAPS, "absent", { namespace: "default" })
      : client.request({ method: "GET", path: "/api/v1/namespaces/default/configmaps/absent" })
    ).then(
      () => done++,
      () => done++,
    ),
  );
  /** Waits (bounded, real time) until `n` requests have been answered. */
  const answered = async (n: number): Promise<void> => {
    const start = Date.now();
    while (done < n) {
      if (Date.now() - start > 20_000) assert.fail(`only ${done} of ${n} requests answered`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  await answered(10);
  await settle();
  assert.equal(client.requestCount, 10, "only the burst went out");
  assert.equal(done, 10);
  await clock.advance(199);
  await settle();
  assert.equal(client.requestCount, 10, "no token before 1/qps");
  await clock.advance(1);
  await answered(11);
  assert.equal(client.requestCount, 11, "one more token after 1/qps");
  await clock.advance(400);
  await Promise.all(requests);
  assert.equal(client.requestCount, 13);
});

test("connections are pooled: many requests reuse one keep-alive connection", async () => {
  const client = env.client();
  let opened = 0;
  const onSocket = (): void => {
    opened++;
  };
  diagnostics.subscribe("net.client.socket", onSocket);
  try {
    for (let i = 0; i < 20; i++) {
      await client.get(NAMESPACES, "default");
      await client.list(CONFIGMAPS, { namespace: "default", limit: 1 });
    }
  } finally {
    diagnostics.unsubscribe("net.client.socket", onSocket);
    client.close();
  }
  // Without pooling this would be 40.
  assert.equal(opened, 1, `opened ${opened} connections for 40 requests`);
});

test("exec credential plugin: a rejected token (401) is replaced by a fresh run on the next request", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-kube-exec-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const admin = parseYaml(await readFile(env.kubeconfigPath, "utf8")) as {
    clusters: { cluster: Record<string, unknown> }[];
    users: { user: { token: string } }[];
  };
  const runs = join(dir, "runs");
  // The first run hands out a wrong token, later runs the real one.
  await writeFile(
    join(dir, "plugin.sh"),
    `#!/bin/sh
echo run >> "${runs}"
if [ "$(wc -l < "${runs}")" -eq 1 ]; then token=wrong; else token="$REAL_TOKEN"; fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$token"
`,
    { mode: 0o755 },
  );
  await writeFile(
    join(dir, "config"),
    stringifyYaml({
      clusters: [{ name: "c", cluster: admin.clusters[0]?.cluster }],
      users: [
        {
          name: "u",
          user: {
            exec: {
              apiVersion: "client.authentication.k8s.io/v1",
              command: "./plugin.sh",
              interactiveMode: "Never",
              env: [{ name: "REAL_TOKEN", value: admin.users[0]?.user.token }],
            },
          },
        },
      ],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  const client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig: join(dir, "config") }) });
  t.after(() => client.close());
  await assert.rejects(client.get(NAMESPACES, "default"), (e: unknown) => apiStatusCode(e) === 401);
  const ns = await client.get(NAMESPACES, "default");
  assert.equal(ns.metadata?.name, "default");
  await client.get(NAMESPACES, "default");
  assert.equal((await readFile(runs, "utf8")).trim().split("\n").length, 2, "one run per credential");
});
