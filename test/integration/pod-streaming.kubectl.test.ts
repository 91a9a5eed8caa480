// `kubectl logs` and `kubectl exec` (the machine's real kubectl) through the API server's
// pods/log and pods/exec, proxied to a node agent's kubelet endpoint (its secure port, webhook
// authorization: the API server's kubelet-client identity must pass TokenReview and a
// nodes/proxy SubjectAccessReview there), over WebSocket (current kubectl) and SPDY
// (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false). The containers are the test stand-in runtime's
// plain processes (test/harness/process-streams.ts), so this runs unprivileged too; the real
// sandboxed runtime has its own end-to-end test. RBAC: pods/exec create and pods/log get, a user
// without them gets 403.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { test, type TestContext } from "node:test";
import { GVR, type Node, type Pod } from "../../src/api/index.ts";
import { memoryLogger } from "../../src/base/index.ts";
import { ExecError, execInPod, type KubeClient } from "../../src/kube/index.ts";
import { freePort } from "../../src/cluster/ports.ts";
import { defer, tempDir } from "../harness/cleanup.ts";
import { kubectl, kubectlMissing, type KubectlResult } from "../harness/kubectl.ts";
import { runNode, testServer } from "../harness/node.ts";
import { ProcessStreams } from "../harness/process-streams.ts";
import { until } from "../harness/until.ts";

const NODE = "node-a";
const NAMESPACE = "default";
const POD = "shell";
const app = { namespace: NAMESPACE, pod: POD, container: "app" };
const sidecar = { namespace: NAMESPACE, pod: POD, container: "sidecar" };

function twoContainerPod(name: string, nodeName?: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      containers: [
        { name: "app", image: "busybox" },
        { name: "sidecar", image: "busybox" },
      ],
    },
  };
}

interface Cluster {
  admin: KubeClient;
  kubeconfig: string;
  runtime: ProcessStreams;
  run: (
    args: readonly string[],
    options?: { stdin?: string; env?: Record<string, string> },
  ) => Promise<KubectlResult>;
  /** The node's log lines of exec sessions (transport and protocol each used). */
  sessions: () => string[];
}

async function startCluster(t: TestContext): Promise<Cluster> {
  const server = await testServer(t);
  const admin = server.client();
  defer(t, () => admin.close());
  const runtime = new ProcessStreams();
  const log = memoryLogger({ verbosity: 4 });
  const rootDir = await tempDir(t, "csikit-streaming-");
  await runNode(t, admin, {
    nodeName: NODE,
    rootDir,
    secureServing: {
      address: "127.0.0.1",
      port: await freePort(),
      certFile: "",
      keyFile: "",
      webhookAuthorization: true,
    },
    containerStreams: runtime,
    logger: log.logger,
  });
  const node = await admin.get<Node>(GVR.nodes, NODE);
  assert.ok(
    (node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0) > 0,
    "the node reports its kubelet port",
  );
  assert.equal(node.status?.addresses?.find((a) => a.type === "InternalIP")?.address, "127.0.0.1");
  await admin.create(GVR.pods, twoContainerPod(POD, NODE));
  const kubeconfig = server.kubeconfigPath;
  const run: Cluster["run"] = (args, options = {}) =>
    kubectl(args, { kubeconfig, stdin: options.stdin, env: options.env, timeoutMs: 60_000 });
  runtime.start(app);
  runtime.start(sidecar);
  // The node serves a pod once its own watch has it.
  await until(
    async () => (await run(["logs", POD, "-c", "app"])).code === 0,
    "the node agent knows the pod",
    {
      timeoutMs: 30_000,
      intervalMs: 200,
    },
  );
  return {
    admin,
    kubeconfig,
    runtime,
    run,
    sessions: () => log.lines.filter((l) => l.includes("exec session")),
  };
}

test("kubectl logs and exec through pods/log and pods/exec", { skip: kubectlMissing() }, async (t) => {
  const cluster = await startCluster(t);
  const { runtime } = cluster;
  const run = cluster.run;

  await t.test("logs: -c, --tail, -f, --previous", async () => {
    for (const line of ["one", "two", "three"]) runtime.log(app, line);
    runtime.log(sidecar, "from the sidecar");
    const all = await run(["logs", POD, "-c", "app"]);
    assert.equal(all.code, 0, all.stderr);
    assert.equal(all.stdout, "one\ntwo\nthree\n");
    const other = await run(["logs", POD, "-c", "sidecar"]);
    assert.equal(other.stdout, "from the sidecar\n");
    const tail = await run(["logs", POD, "-c", "app", "--tail=1"]);
    assert.equal(tail.stdout, "three\n");
    const limited = await run(["logs", POD, "-c", "app", "--limit-bytes=6"]);
    assert.equal(limited.stdout, "one\ntw");

    // -f: lines arrive while kubectl waits; it ends when the container stops.
    const follow = spawn(
      "kubectl",
      [
        "--kubeconfig",
        cluster.kubeconfig,
        "--cache-dir",
        join(dirname(cluster.kubeconfig), "kubectl-cache"),
        "logs",
        "-f",
        POD,
        "-c",
        "app",
        "--tail=0",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    defer(t, () => follow.kill("SIGKILL"));
    let followed = "";
    follow.stdout.on("data", (chunk: Buffer) => (followed += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => follow.on("close", (code) => resolve(code)));
    // Lines appended until kubectl shows them: the follow request is open once one arrives.
    let n = 0;
    await until(
      () => {
        runtime.log(app, `live ${++n}`);
        return followed.includes("live");
      },
      "kubectl logs -f shows a new line",
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    runtime.log(app, "last words");
    await until(() => followed.includes("last words\n"), "the last line", { timeoutMs: 30_000 });
    runtime.stop(app);
    assert.equal(await exited, 0);
    assert.ok(!followed.includes("three"), "--tail=0 sent no old line");

    // A restart: the old lines are --previous, the new container's are current.
    runtime.start(app);
    runtime.log(app, "after restart");
    const previous = await run(["logs", POD, "-c", "app", "--previous"]);
    assert.equal(previous.code, 0, previous.stderr);
    assert.match(previous.stdout, /^one\ntwo\nthree\n/);
    assert.equal((await run(["logs", POD, "-c", "app"])).stdout, "after restart\n");
  });

  await t.test("logs: a container that has not run, an unscheduled pod, a wrong container", async () => {
    await cluster.admin.create(GVR.pods, twoContainerPod("idle", NODE));
    const never = await until(
      async () => {
        const result = await run(["logs", "idle", "-c", "app"]);
        return result.stderr.includes("does not exist") ? false : result;
      },
      "the node agent knows the idle pod",
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    assert.notEqual(never.code, 0);
    assert.match(
      never.stderr,
      /Error from server \(BadRequest\): container "app" in pod "idle" is not available/,
    );

    await cluster.admin.create(GVR.pods, twoContainerPod("unscheduled"));
    const unscheduled = await run(["logs", "unscheduled", "-c", "app"]);
    assert.equal(unscheduled.code, 0, unscheduled.stderr);
    assert.equal(unscheduled.stdout, "");

    const wrong = await run(["logs", POD, "-c", "nope"]);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /container nope is not valid for pod shell/);
  });

  for (const transport of ["WebSocket", "SPDY"] as const) {
    const env = transport === "SPDY" ? { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false" } : {};
    await t.test(`exec over ${transport}: stdout, stderr, exit code, stdin`, async () => {
      const ok = await run(["exec", POD, "-c", "app", "--", "sh", "-c", "echo out; echo err >&2"], { env });
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout, "out\n");
      assert.match(ok.stderr, /^err$/m);

      const failed = await run(["exec", POD, "-c", "app", "--", "sh", "-c", "echo partial; exit 3"], { env });
      assert.equal(failed.code, 3, failed.stderr);
      assert.equal(failed.stdout, "partial\n");
      assert.match(failed.stderr, /command terminated with exit code 3/);

      const input = "hello through stdin\nsecond line\n";
      const echoed = await run(["exec", "-i", POD, "-c", "app", "--", "cat"], { stdin: input, env });
      assert.equal(echoed.code, 0, echoed.stderr);
      assert.equal(echoed.stdout, input);

      // More than one SPDY data frame / WebSocket message each way.
      const big = "x".repeat(200_000) + "\n";
      const counted = await run(["exec", "-i", POD, "-c", "app", "--", "wc", "-c"], { stdin: big, env });
      assert.equal(counted.stdout.trim(), String(big.length));

      const stopped = await run(["exec", POD, "-c", "sidecar", "--", "true"], { env });
      assert.equal(stopped.code, 0, stopped.stderr);
    });
  }

  await t.test(
    "exec: current kubectl speaks v5 over WebSocket, KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false v5 over SPDY",
    async () => {
      const before = cluster.sessions().length;
      assert.equal((await run(["exec", POD, "-c", "app", "--", "true"])).code, 0);
      const spdy = await run(["exec", POD, "-c", "app", "--", "true"], {
        env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false" },
      });
      assert.equal(spdy.code, 0, spdy.stderr);
      const [websocketSession, spdySession] = cluster.sessions().slice(before);
      assert.match(websocketSession ?? "", /transport="?websocket"? protocol="?v5\.channel\.k8s\.io/);
      assert.match(spdySession ?? "", /transport="?spdy"? protocol="?v5\.channel\.k8s\.io/);
    },
  );

  await t.test(
    "src/kube's execInPod: v5 with stdin closed by the CLOSE signal, exit codes, refusals",
    async () => {
      const echoed = await execInPod(cluster.admin, NAMESPACE, POD, ["cat"], {
        container: "app",
        stdin: "via v5\n",
      });
      assert.deepEqual(echoed, { code: 0, stdout: "via v5\n", stderr: "" });
      const failed = await execInPod(cluster.admin, NAMESPACE, POD, ["sh", "-c", "echo e >&2; exit 7"], {
        container: "sidecar",
      });
      assert.deepEqual(failed, { code: 7, stdout: "", stderr: "e\n" });
      await assert.rejects(
        execInPod(cluster.admin, NAMESPACE, "no-such-pod", ["true"]),
        (error: Error) =>
          error instanceof ExecError && /HTTP 404.*pods "no-such-pod" not found/.test(error.message),
      );
      await assert.rejects(
        execInPod(cluster.admin, NAMESPACE, POD, ["true"]),
        /a container name must be specified for pod shell, choose one of: \[app sidecar\]/,
      );
    },
  );

  await t.test("exec into a stopped container: the runtime's refusal", async () => {
    runtime.stop(sidecar);
    const refused = await run(["exec", POD, "-c", "sidecar", "--", "true"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /container "sidecar" is not running/);
    runtime.start(sidecar);
  });

  await t.test("RBAC: pods/exec create and pods/log get, else 403", async () => {
    const sa = {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "limited", namespace: NAMESPACE },
    };
    assert.equal((await run(["apply", "-f", "-"], { stdin: JSON.stringify(sa) })).code, 0);
    const role = (rules: object[]) => ({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "limited", namespace: NAMESPACE },
      rules,
    });
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "limited", namespace: NAMESPACE },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "limited" },
      subjects: [{ kind: "ServiceAccount", name: "limited", namespace: NAMESPACE }],
    };
    const podsOnly = [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }];
    // `get` on pods/exec is not enough: a WebSocket exec (a GET) is authorized as create.
    const withGetExec = [...podsOnly, { apiGroups: [""], resources: ["pods/exec"], verbs: ["get"] }];
    for (const object of [role(withGetExec), binding])
      assert.equal((await run(["apply", "-f", "-"], { stdin: JSON.stringify(object) })).code, 0);
    const token = (await run(["create", "token", "limited", "-n", NAMESPACE])).stdout.trim();
    assert.ok(token.length > 0);
    const as = (args: string[], env: Record<string, string> = {}) =>
      run(["--token", token, ...args], { env });

    const logs = await as(["logs", POD, "-c", "app"]);
    assert.notEqual(logs.code, 0);
    assert.match(logs.stderr, /cannot get resource "pods\/log" in API group "" in the namespace "default"/);
    for (const env of [{}, { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false" }]) {
      const exec = await as(["exec", POD, "-c", "app", "--", "true"], env);
      assert.notEqual(exec.code, 0);
      assert.match(
        exec.stderr,
        /cannot create resource "pods\/exec" in API group "" in the namespace "default"/,
      );
    }
    assert.equal(runtime.commands.filter((c) => c.join(" ") === "true").length, 4, "no refused exec ran");

    const granted = [
      ...podsOnly,
      { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
      { apiGroups: [""], resources: ["pods/exec"], verbs: ["create"] },
    ];
    assert.equal((await run(["apply", "-f", "-"], { stdin: JSON.stringify(role(granted)) })).code, 0);
    await until(async () => (await as(["logs", POD, "-c", "app"])).code === 0, "the granted role applies", {
      timeoutMs: 10_000,
      intervalMs: 200,
    });
    const exec = await as(["exec", POD, "-c", "app", "--", "echo", "allowed"]);
    assert.equal(exec.code, 0, exec.stderr);
    assert.equal(exec.stdout, "allowed\n");
  });
});
