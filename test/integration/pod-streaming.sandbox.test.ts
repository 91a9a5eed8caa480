// `kubectl logs` and `kubectl exec` against pods the node agent really runs: the real runtime
// (src/node/runtime, bubblewrap sandbox), its CRI log files, its restarts, through the API
// server's pods/log and pods/exec and the node's kubelet endpoint, over WebSocket and SPDY.
// The sandbox needs root and bubblewrap: without them this file skips, saying why (the
// streaming path itself is covered unprivileged by pod-streaming.kubectl.test.ts).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { GVR, type Pod } from "../../src/api/index.ts";
import { sandboxUnavailable } from "../../src/node/index.ts";
import { freePort } from "../../src/cluster/ports.ts";
import { defer, tempDir } from "../harness/cleanup.ts";
import { kubectl, kubectlMissing } from "../harness/kubectl.ts";
import { getPod, runNode, testServer } from "../harness/node.ts";
import { until } from "../harness/until.ts";

const unavailable = await sandboxUnavailable();
const skip = kubectlMissing() || (unavailable ? `no sandbox on this machine: ${unavailable}` : false);
if (skip) console.log(`# skipped: ${skip}`);

const NS = "default";
const SPDY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false" };

/** First run prints "first" and fails; its restart (at once, no back-off yet) prints "second" and stays. */
const RESTARTING =
  "if [ -f /work/ran ]; then echo second; exec sleep 3600; fi; touch /work/ran; echo first; echo to-stderr >&2; exit 1";
/** Prints what lands in /work/say, line by line. */
const TICKER =
  "echo ready; while true; do if [ -f /work/say ]; then cat /work/say; rm -f /work/say; fi; sleep 0.2; done";

test("kubectl logs and exec on sandboxed pods of the real runtime", { skip }, async (t) => {
  const server = await testServer(t);
  const admin = server.client();
  defer(t, () => admin.close());
  await runNode(t, admin, {
    nodeName: "node-a",
    rootDir: await tempDir(t, "csikit-sandbox-streaming-"),
    secureServing: {
      address: "127.0.0.1",
      port: await freePort(),
      certFile: "",
      keyFile: "",
      webhookAuthorization: true,
    },
  });
  const pod: Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "worker", namespace: NS },
    spec: {
      nodeName: "node-a",
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "main",
          image: "none",
          command: ["sh", "-c", RESTARTING],
          volumeMounts: [{ name: "work", mountPath: "/work" }],
        },
        {
          name: "ticker",
          image: "none",
          command: ["sh", "-c", TICKER],
          volumeMounts: [{ name: "work", mountPath: "/work" }],
        },
      ],
      volumes: [{ name: "work", emptyDir: {} }],
    },
  };
  await admin.create(GVR.pods, pod);
  const kubeconfig = server.kubeconfigPath;
  const run = (args: string[], options: { stdin?: string; env?: Record<string, string> } = {}) =>
    kubectl(args, { kubeconfig, ...options });
  await until(
    async () => {
      const current = await getPod(admin, NS, "worker");
      const main = current?.status?.containerStatuses?.find((s) => s.name === "main");
      return main?.restartCount === 1 && main.state?.running !== undefined;
    },
    "the main container restarted once and runs",
    { timeoutMs: 60_000, intervalMs: 100 },
  );

  await t.test("logs: -c, --previous (the run before the restart), --tail, -f", async () => {
    const current = await run(["logs", "worker", "-c", "main"]);
    assert.equal(current.code, 0, current.stderr);
    assert.equal(current.stdout, "second\n");
    const previous = await run(["logs", "worker", "-c", "main", "--previous"]);
    assert.equal(previous.code, 0, previous.stderr);
    // The CRI log holds both streams, as the kubelet's: stdout and stderr lines, in order.
    assert.equal(previous.stdout, "first\nto-stderr\n");

    const follow = spawn(
      "kubectl",
      [
        "--kubeconfig",
        kubeconfig,
        "--cache-dir",
        join(dirname(kubeconfig), "kubectl-cache"),
        "logs",
        "-f",
        "worker",
        "-c",
        "ticker",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    defer(t, () => follow.kill("SIGKILL"));
    let followed = "";
    follow.stdout.on("data", (chunk: Buffer) => (followed += chunk.toString()));
    await until(() => followed.includes("ready\n"), "kubectl logs -f shows the ticker's first line", {
      timeoutMs: 30_000,
    });
    // Written through exec, printed by the container, seen by the follower.
    const said = await run([
      "exec",
      "worker",
      "-c",
      "ticker",
      "--",
      "sh",
      "-c",
      "echo hello-follow > /work/say",
    ]);
    assert.equal(said.code, 0, said.stderr);
    await until(() => followed.includes("hello-follow\n"), "the followed line", { timeoutMs: 30_000 });
    follow.kill("SIGTERM");

    const tail = await run(["logs", "worker", "-c", "ticker", "--tail=1"]);
    assert.equal(tail.stdout, "hello-follow\n");
  });

  for (const [transport, env] of [
    ["WebSocket", {}],
    ["SPDY", SPDY],
  ] as const) {
    await t.test(
      `exec over ${transport} inside the sandbox: output, exit code, stdin, the pod's volume`,
      async () => {
        const out = await run(
          ["exec", "worker", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2; exit 4"],
          { env },
        );
        assert.equal(out.code, 4, out.stderr);
        assert.equal(out.stdout, "out\n");
        assert.match(out.stderr, /^err$/m);
        assert.match(out.stderr, /command terminated with exit code 4/);

        const file = `/work/from-${transport}`;
        const written = await run(["exec", "-i", "worker", "-c", "main", "--", "sh", "-c", `cat > ${file}`], {
          stdin: `through ${transport} stdin\n`,
          env,
        });
        assert.equal(written.code, 0, written.stderr);
        // The other container shares the emptyDir: the data is in the volume, not in the exec.
        const read = await run(["exec", "worker", "-c", "ticker", "--", "cat", file], { env });
        assert.equal(read.stdout, `through ${transport} stdin\n`);

        // The sandbox's own view: PID namespace (the container's command is pid 1), read-only host root.
        const pid1 = await run(["exec", "worker", "-c", "main", "--", "cat", "/proc/1/cmdline"], { env });
        assert.match(pid1.stdout.replaceAll("\0", " "), /sleep 3600/);
        const outside = await run(
          ["exec", "worker", "-c", "main", "--", "sh", "-c", "echo x > /etc/csikit-escape"],
          { env },
        );
        assert.notEqual(outside.code, 0);
        assert.match(outside.stderr, /Read-only file system/);

        // `kubectl exec -it` on a terminal of 33 rows × 111 columns: kubectl sends that size
        // on the resize channel (WebSocket channel 4, or the SPDY resize stream), and the
        // command's own terminal has it.
        const size = await onTerminal(
          { rows: 33, cols: 111 },
          ["--kubeconfig", kubeconfig, "--cache-dir", join(dirname(kubeconfig), "kubectl-cache")],
          ["exec", "-it", "worker", "-c", "main", "--", "stty", "size"],
          env,
        );
        assert.match(size, /^33 111\r?$/m);
      },
    );
  }
});

/**
 * kubectl run on a pseudo-terminal of the given size (util-linux `script` makes it), for the
 * commands that act only on a terminal (`exec -it`); its terminal output, bounded to 60 s.
 */
async function onTerminal(
  size: { rows: number; cols: number },
  global: string[],
  args: string[],
  env: Record<string, string>,
): Promise<string> {
  const quoted = ["kubectl", ...global, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const child = spawn(
    "script",
    [
      "--quiet",
      "--return",
      "--flush",
      "--command",
      `stty rows ${size.rows} cols ${size.cols}; ${quoted}`,
      "/dev/null",
    ],
    { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  // script's stdin stays open while kubectl runs (an end would reach kubectl as end of input).
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(timer);
  child.stdin.end();
  assert.equal(code, 0, out);
  return out;
}
