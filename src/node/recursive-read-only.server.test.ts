// KEP-3857 recursive read-only mounts, end to end through the real node agent and its
// bubblewrap sandbox: a hostPath volume with a tmpfs mounted below it, mounted read-only twice
// into one container — with recursiveReadOnly Enabled (the submount is read-only too) and
// without (only the top is, as upstream's plain readOnly); the container status' volumeMounts
// and the Node's runtimeHandlers say so; Enabled on a writable mount fails the container with
// CreateContainerConfigError, as the kubelet does. Needs root and bubblewrap (the sandbox and
// the tmpfs): otherwise the pod parts skip, saying why.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { promisify } from "node:util";
import { test } from "node:test";
import { GVR, type Node, type Pod } from "../api/index.ts";
import { getPod, runNode, testServer } from "../../test/harness/node.ts";
import { until } from "../../test/harness/until.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";
import { sandboxUnavailable, type ContainerStreams } from "./index.ts";

const run = promisify(execFile);
const NODE = "node-a";
const NS = "default";

const unavailable = await sandboxUnavailable();
if (unavailable) console.log(`# recursive read-only pod tests skip: ${unavailable}`);

const SCRIPT = [
  "for f in /rro/top /rro/sub/x /ro/top /ro/sub/x; do",
  '  if touch "$f" 2>/dev/null; then echo "$f writable"; else echo "$f read-only"; fi',
  "done",
].join("\n");

test("Node.status.runtimeHandlers reports recursiveReadOnlyMounts as the sandbox can", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  await runNode(t, client, { nodeName: NODE, rootDir: await tempDir(t) });
  const node = await client.get<Node>(GVR.nodes, NODE);
  const handlers = (node.status as { runtimeHandlers?: unknown }).runtimeHandlers;
  assert.deepEqual(handlers, [
    { name: "", features: { recursiveReadOnlyMounts: unavailable === undefined } },
  ]);
});

test(
  "recursiveReadOnly Enabled: the submount is read-only too; plain readOnly: only the top; status volumeMounts say which",
  { skip: unavailable ?? false },
  async (t) => {
    const api = await testServer(t);
    const client = api.client();
    const hostDir = await tempDir(t, "csikit-rro-");
    await mkdir(join(hostDir, "sub"));
    await run("mount", ["-t", "tmpfs", "-o", "size=1m", "rro-test", join(hostDir, "sub")]);
    defer(t, () => run("umount", [join(hostDir, "sub")]).then(() => undefined));
    let streams!: ContainerStreams;
    await runNode(t, client, {
      nodeName: NODE,
      rootDir: await tempDir(t),
      onReady: (info) => (streams = info.streams),
    });
    const pod: Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "rro", namespace: NS },
      spec: {
        nodeName: NODE,
        restartPolicy: "Never",
        volumes: [{ name: "data", hostPath: { path: hostDir, type: "Directory" } }],
        containers: [
          {
            name: "app",
            image: "busybox",
            command: ["sh", "-c", SCRIPT],
            volumeMounts: [
              { name: "data", mountPath: "/rro", readOnly: true, recursiveReadOnly: "Enabled" },
              { name: "data", mountPath: "/ro", readOnly: true },
            ],
          },
          {
            name: "bad",
            image: "busybox",
            command: ["true"],
            volumeMounts: [{ name: "data", mountPath: "/rw", recursiveReadOnly: "Enabled" }],
          },
        ],
      },
    };
    await client.create(GVR.pods, pod);
    const seen = await until(async () => {
      const current = await getPod(client, NS, "rro");
      const app = current?.status?.containerStatuses?.find((s) => s.name === "app");
      const bad = current?.status?.containerStatuses?.find((s) => s.name === "bad");
      return app?.state?.terminated !== undefined && bad?.state?.waiting !== undefined && current;
    }, "app finished, bad refused");
    const statuses = seen.status?.containerStatuses ?? [];
    const app = statuses.find((s) => s.name === "app");
    assert.equal(app?.state?.terminated?.exitCode, 0);
    assert.deepEqual(app?.volumeMounts, [
      { name: "data", mountPath: "/rro", readOnly: true, recursiveReadOnly: "Enabled" },
      { name: "data", mountPath: "/ro", readOnly: true, recursiveReadOnly: "Disabled" },
    ]);
    const bad = statuses.find((s) => s.name === "bad");
    assert.equal(bad?.state?.waiting?.reason, "CreateContainerConfigError");
    assert.match(
      String(bad?.state?.waiting?.message),
      /requested recursive read-only mode, but it is not read-only/,
    );
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on("data", (c: Buffer) => chunks.push(c));
    await streams.logs({ namespace: NS, pod: "rro", container: "app" }, {}, out, AbortSignal.timeout(20_000));
    assert.deepEqual(Buffer.concat(chunks).toString("utf8").trim().split("\n"), [
      "/rro/top read-only",
      "/rro/sub/x read-only",
      "/ro/top read-only",
      "/ro/sub/x writable",
    ]);
  },
);
