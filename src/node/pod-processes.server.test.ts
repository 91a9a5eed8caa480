// Pods' containers run as sandboxed processes by the real node agent against the embedded API
// server (test/harness/node.ts): exit codes and restarts with the kubelet's back-off, init
// containers, CRI log files, env and volumes materialised, the container's user, graceful
// termination, the read-only host root and another pod's volumes out of sight, exec. The
// sandbox needs root and bubblewrap (`npm run setup`): without them those tests skip, saying
// why, and one test checks that such a pod fails with an event instead of running unsandboxed.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { promisify } from "node:util";
import { test, type TestContext } from "node:test";
import { GVR, type ConfigMap, type Pod, type Secret } from "../api/index.ts";
import { FakeClock, memoryLogger, type Logger } from "../base/index.ts";
import type { CoreEvent } from "../kube/index.ts";
import {
  boundClaim,
  csiDriver,
  getPod,
  persistentVolume,
  runNode,
  runRealRegistrar,
  serveScriptedNode,
  testServer,
} from "../../test/harness/node.ts";
import { until } from "../../test/harness/until.ts";
import { kubectl } from "../../test/harness/kubectl.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";
import { podLogDir, sandboxUnavailable, type ContainerStreams, type LogOptions } from "./index.ts";

const execFileAsync = promisify(execFile);
const NODE = "node-a";
const NS = "default";
const DRIVER = "scripted.csi.k8s.io";

const unavailable = await sandboxUnavailable();
const needsSandbox = unavailable ? `no sandbox on this machine: ${unavailable}` : false;
if (unavailable) console.log(`# sandbox-dependent tests skip: ${unavailable}`);

async function setup(
  t: TestContext,
  options: { clock?: FakeClock; podProcesses?: boolean; csiDriver?: boolean; logger?: Logger } = {},
) {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const driverDir = options.csiDriver ? await tempDir(t, "csikit-node-driver-") : "";
  if (options.csiDriver) {
    // A scripted CSI node plugin whose publish makes the target dir (no mount: the sandbox
    // binds whatever the publish path is).
    await serveScriptedNode(t, {
      endpoint: join(driverDir, "csi.sock"),
      nodeId: "scripted-a",
      capabilities: [],
    });
    await client.create(
      GVR.csiDrivers,
      csiDriver(DRIVER, { attachRequired: false, volumeLifecycleModes: ["Persistent", "Ephemeral"] }),
    );
  }
  let streams!: ContainerStreams;
  await runNode(t, client, {
    nodeName: NODE,
    rootDir: root,
    ...(options.clock ? { runtimeClock: options.clock } : {}),
    ...(options.podProcesses !== undefined ? { podProcesses: options.podProcesses } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    onReady: (info) => (streams = info.streams),
  });
  if (options.csiDriver)
    await runRealRegistrar(t, client, {
      rootDir: root,
      nodeName: NODE,
      csiAddress: join(driverDir, "csi.sock"),
    });
  return { client, root, streams, kubeconfig: api.kubeconfigPath };
}

type Client = Awaited<ReturnType<typeof setup>>["client"];

function podOf(name: string, spec: Partial<NonNullable<Pod["spec"]>>): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS, labels: { app: name } },
    spec: { nodeName: NODE, containers: [], ...spec },
  };
}

function sh(name: string, script: string, extra: Record<string, unknown> = {}) {
  return { name, image: "busybox", command: ["sh", "-c", script], ...extra };
}

async function create(client: Client, pod: Pod): Promise<Pod> {
  return client.create<Pod>(GVR.pods, pod);
}

async function waitPod(
  client: Client,
  name: string,
  what: string,
  check: (pod: Pod) => boolean,
): Promise<Pod> {
  let found: Pod | undefined;
  try {
    await until(async () => {
      found = await getPod(client, NS, name);
      return found !== undefined && check(found);
    }, what);
  } catch (error) {
    // The pod as last seen says where it stopped.
    console.log(`# ${name}: ${JSON.stringify(found?.status)}`);
    throw error;
  }
  return found!;
}

function status(pod: Pod, container: string) {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (s) => s.name === container,
  );
}

async function events(client: Client): Promise<CoreEvent[]> {
  return (await client.list<CoreEvent>(GVR.events, { namespace: NS })).items;
}

async function logsOf(streams: ContainerStreams, pod: string, container: string, options: LogOptions = {}) {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on("data", (c: Buffer) => chunks.push(c));
  await streams.logs({ namespace: NS, pod, container }, options, out, AbortSignal.timeout(20_000));
  return Buffer.concat(chunks).toString("utf8");
}

async function exec(
  streams: ContainerStreams,
  pod: string,
  container: string,
  command: string[],
  stdin?: string,
) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (c: Buffer) => out.push(c));
  stderr.on("data", (c: Buffer) => err.push(c));
  const input = stdin !== undefined ? PassThrough.from([stdin]) : undefined;
  const code = await streams.exec(
    { namespace: NS, pod, container },
    command,
    { stdout, stderr, tty: false, ...(input ? { stdin: input } : {}) },
    AbortSignal.timeout(20_000),
  );
  return { code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") };
}

test("a pod without a command is Running with nothing executed, as before", async (t) => {
  const { client } = await setup(t);
  await create(client, podOf("idle", { containers: [{ name: "app", image: "busybox" }] }));
  const pod = await waitPod(client, "idle", "idle pod Running", (p) => p.status?.phase === "Running");
  assert.equal(status(pod, "app")?.ready, true);
  assert.ok(status(pod, "app")?.state?.running);
});

test(
  "without a sandbox, a pod with a command fails with an event saying why, never running",
  { skip: !needsSandbox ? "this machine can sandbox" : false },
  async (t) => {
    const { client } = await setup(t);
    await create(client, podOf("nosandbox", { restartPolicy: "Never", containers: [sh("app", "echo hi")] }));
    const pod = await waitPod(
      client,
      "nosandbox",
      "container waiting with CreateContainerError",
      (p) => status(p, "app")?.state?.waiting?.reason === "CreateContainerError",
    );
    assert.equal(pod.status?.phase, "Pending");
    assert.match(String(status(pod, "app")?.state?.waiting?.message), /sandbox/);
    await until(
      async () =>
        (await events(client)).some((e) => e.reason === "Failed" && /sandbox/.test(e.message ?? "")),
      "Failed event",
    );
  },
);

test(
  "exit codes: Never → Succeeded or Failed with the container's code; logs in CRI format at the kubelet's layout",
  { skip: needsSandbox },
  async (t) => {
    const { client, root, streams, kubeconfig } = await setup(t);
    const ok = await create(
      client,
      podOf("ok", {
        restartPolicy: "Never",
        containers: [sh("app", "echo hello; echo oops >&2; printf partial")],
      }),
    );
    const bad = await create(
      client,
      podOf("bad", { restartPolicy: "Never", containers: [sh("app", "exit 3")] }),
    );
    const okPod = await waitPod(client, "ok", "ok Succeeded", (p) => p.status?.phase === "Succeeded");
    const terminated = status(okPod, "app")?.state?.terminated;
    assert.equal(terminated?.exitCode, 0);
    assert.equal(terminated?.reason, "Completed");
    assert.equal(okPod.status?.conditions?.find((c) => c.type === "Ready")?.reason, "PodCompleted");
    const badPod = await waitPod(client, "bad", "bad Failed", (p) => p.status?.phase === "Failed");
    assert.deepEqual((await columns(kubeconfig, "ok")).slice(0, 4), ["ok", "0/1", "Completed", "0"]);
    assert.deepEqual((await columns(kubeconfig, "bad")).slice(0, 4), ["bad", "0/1", "Error", "0"]);
    assert.equal(status(badPod, "app")?.state?.terminated?.exitCode, 3);
    assert.equal(status(badPod, "app")?.state?.terminated?.reason, "Error");
    const logFile = join(
      podLogDir(join(root, "logs", "pods"), NS, "ok", ok.metadata?.uid ?? ""),
      "app",
      "0.log",
    );
    const lines = (await readFile(logFile, "utf8")).trimEnd().split("\n");
    assert.equal(lines.length, 3);
    const pattern = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z (stdout|stderr) [FP] /;
    for (const line of lines) assert.match(line, pattern);
    assert.ok(lines.some((l) => / stdout F hello$/.test(l)));
    assert.ok(lines.some((l) => / stderr F oops$/.test(l)));
    assert.ok(lines.some((l) => / stdout F partial$/.test(l)));
    assert.ok(bad.metadata?.uid);
    assert.equal(
      await logsOf(streams, "ok", "app", { tailLines: 1 }).then((s) => s.split("\n").filter(Boolean).length),
      1,
    );
    const all = await logsOf(streams, "ok", "app");
    assert.ok(all.includes("hello\n") && all.includes("oops\n"));
    const stamped = await logsOf(streams, "ok", "app", { timestamps: true, limitBytes: 10 });
    assert.equal(stamped.length, 10);
  },
);

test(
  "restartPolicy Always: restarts with the kubelet's back-off (10s doubling), CrashLoopBackOff, restartCount, lastState, --previous logs",
  { skip: needsSandbox },
  async (t) => {
    const clock = new FakeClock(Date.now());
    const { client, streams, kubeconfig } = await setup(t, { clock });
    await create(client, podOf("crash", { containers: [sh("app", "echo run; exit 2")] }));
    // First exit: restarted at once (no back-off yet); second exit: CrashLoopBackOff 10s.
    let pod = await waitPod(
      client,
      "crash",
      "CrashLoopBackOff after the second exit",
      (p) => status(p, "app")?.state?.waiting?.reason === "CrashLoopBackOff",
    );
    let app = status(pod, "app")!;
    assert.equal(app.restartCount, 1);
    assert.match(
      String(app.state?.waiting?.message),
      /^back-off 10s restarting failed container=app pod=crash_default\(/,
    );
    assert.equal(app.lastState?.terminated?.exitCode, 2);
    assert.equal(app.lastState?.terminated?.reason, "Error");
    assert.equal(pod.status?.phase, "Running");
    assert.equal(app.ready, false);
    // Not restarted before its back-off is over.
    await clock.advance(9_000);
    pod = (await getPod(client, NS, "crash"))!;
    assert.equal(status(pod, "app")?.restartCount, 1);
    await clock.advance(1_000);
    pod = await waitPod(
      client,
      "crash",
      "second back-off 20s",
      (p) =>
        status(p, "app")?.restartCount === 2 &&
        status(p, "app")?.state?.waiting?.reason === "CrashLoopBackOff",
    );
    assert.match(String(status(pod, "app")?.state?.waiting?.message), /^back-off 20s /);
    await clock.advance(20_000);
    pod = await waitPod(
      client,
      "crash",
      "third back-off 40s",
      (p) =>
        status(p, "app")?.restartCount === 3 &&
        status(p, "app")?.state?.waiting?.reason === "CrashLoopBackOff",
    );
    assert.match(String(status(pod, "app")?.state?.waiting?.message), /^back-off 40s /);
    app = status(pod, "app")!;
    assert.equal(app.ready, false);
    const [name, ready, shown, restarts] = await columns(kubeconfig, "crash");
    assert.deepEqual([name, ready, shown, restarts], ["crash", "0/1", "CrashLoopBackOff", "3"]);
    assert.equal(await logsOf(streams, "crash", "app", { previous: true }), "run\n");
    const backOffs = (await events(client)).filter((e) => e.reason === "BackOff");
    assert.ok(
      backOffs.some(
        (e) =>
          e.message ===
          `Back-off restarting failed container app in pod crash_default(${pod.metadata?.uid ?? ""})`,
      ),
    );
  },
);

test(
  "OnFailure restarts only failures; init containers run first, in order; Init failure under Never fails the pod",
  { skip: needsSandbox },
  async (t) => {
    const { client, streams } = await setup(t);
    await create(
      client,
      podOf("init", {
        restartPolicy: "OnFailure",
        volumes: [{ name: "work", emptyDir: {} }],
        initContainers: [
          sh("first", "echo one > /work/order", { volumeMounts: [{ name: "work", mountPath: "/work" }] }),
          sh("second", "echo two >> /work/order", { volumeMounts: [{ name: "work", mountPath: "/work" }] }),
        ],
        containers: [sh("app", "cat /work/order", { volumeMounts: [{ name: "work", mountPath: "/work" }] })],
      }),
    );
    const pod = await waitPod(client, "init", "init pod Succeeded", (p) => p.status?.phase === "Succeeded");
    assert.equal(status(pod, "first")?.state?.terminated?.reason, "Completed");
    assert.equal(status(pod, "second")?.state?.terminated?.reason, "Completed");
    assert.equal(status(pod, "app")?.restartCount, 0);
    assert.equal(await logsOf(streams, "init", "app"), "one\ntwo\n");

    await create(
      client,
      podOf("initfail", {
        restartPolicy: "Never",
        initContainers: [sh("setup", "exit 7")],
        containers: [sh("app", "echo never")],
      }),
    );
    const failed = await waitPod(
      client,
      "initfail",
      "pod Failed by its init container",
      (p) => p.status?.phase === "Failed",
    );
    assert.equal(status(failed, "setup")?.state?.terminated?.exitCode, 7);
    assert.equal(status(failed, "app")?.state?.waiting?.reason, "PodInitializing");
    assert.equal(failed.status?.conditions?.find((c) => c.type === "Initialized")?.status, "False");
  },
);

test(
  "env, envFrom, valueFrom and configMap/secret/downwardAPI/projected volumes in the atomic writer layout; runAsUser, fsGroup, no capabilities",
  { skip: needsSandbox },
  async (t) => {
    const { client, streams } = await setup(t);
    await client.create<ConfigMap>(GVR.configMaps, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "settings", namespace: NS },
      data: { color: "blue", "1bad": "x", size: "3" },
    });
    await client.create<Secret>(GVR.secrets, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "creds", namespace: NS },
      stringData: { password: "s3cr3t-value" },
    });
    const created = await create(
      client,
      podOf("env", {
        restartPolicy: "Never",
        securityContext: { runAsUser: 1234, runAsGroup: 2345, fsGroup: 3456, supplementalGroups: [4567] },
        volumes: [
          { name: "cm", configMap: { name: "settings", items: [{ key: "color", path: "sub/color.txt" }] } },
          { name: "sec", secret: { secretName: "creds", defaultMode: 0o440 } },
          {
            name: "info",
            downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] },
          },
          {
            name: "all",
            projected: {
              sources: [
                { configMap: { name: "settings", items: [{ key: "size", path: "size" }] } },
                { downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] } },
              ],
            },
          },
          { name: "scratch", emptyDir: {} },
        ],
        containers: [
          sh(
            "app",
            [
              'echo "id=$(id -u):$(id -g):$(id -G)"',
              'echo "env=$GREETING $COLOR $NODE $POD_NAME $MEM_LIMIT $PASSWORD_COPY cfg_size=$cfg_size"',
              "cat /cm/sub/color.txt; echo",
              "cat /sec/password | wc -c",
              "cat /info/labels; echo",
              "cat /all/size; echo; cat /all/name; echo",
              "grep CapEff /proc/self/status",
              "echo data > /scratch/file && stat -c %g /scratch/file",
              "pwd",
              "hostname",
              "readlink /cm/sub; readlink /cm/..data",
            ].join("; "),
            {
              workingDir: "/scratch",
              env: [
                { name: "NAME", value: "world" },
                { name: "GREETING", value: "hello-$(NAME)" },
                { name: "COLOR", valueFrom: { configMapKeyRef: { name: "settings", key: "color" } } },
                { name: "PASSWORD", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } },
                { name: "PASSWORD_COPY", value: "$(PASSWORD)" },
                { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
                { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                {
                  name: "MEM_LIMIT",
                  valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } },
                },
              ],
              envFrom: [
                { prefix: "cfg_", configMapRef: { name: "settings" } },
                { configMapRef: { name: "settings" } },
              ],
              resources: { limits: { memory: "64Mi" } },
              volumeMounts: [
                { name: "cm", mountPath: "/cm" },
                { name: "sec", mountPath: "/sec" },
                { name: "info", mountPath: "/info" },
                { name: "all", mountPath: "/all" },
                { name: "scratch", mountPath: "/scratch" },
              ],
            },
          ),
        ],
      }),
    );
    const pod = await waitPod(
      client,
      "env",
      "env pod done",
      (p) => p.status?.phase === "Succeeded" || p.status?.phase === "Failed",
    );
    const out = await logsOf(streams, "env", "app");
    assert.equal(pod.status?.phase, "Succeeded", out);
    const lines = out.split("\n");
    assert.equal(lines[0], "id=1234:2345:2345 3456 4567");
    assert.equal(lines[1], "env=hello-world blue node-a env 64 s3cr3t-value cfg_size=3");
    assert.equal(lines[2], "blue");
    assert.equal(lines[3], "12");
    assert.equal(lines[4], 'app="env"');
    assert.equal(lines[5], "3");
    assert.equal(lines[6], "env");
    assert.equal(lines[7], "CapEff:\t0000000000000000");
    assert.equal(lines[8], "3456", "a file in an emptyDir of an fsGroup pod is the group's");
    assert.equal(lines[9], "/scratch");
    assert.equal(lines[10], "env");
    assert.equal(lines[11], "..data/sub");
    assert.match(lines[12]!, /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/);
    // An envFrom key that is no variable name is skipped with the kubelet's event.
    await until(
      async () => (await events(client)).some((e) => e.reason === "InvalidEnvironmentVariableNames"),
      "InvalidEnvironmentVariableNames event",
    );
    // The secret value reached the container, never an event.
    for (const event of await events(client)) assert.ok(!(event.message ?? "").includes("s3cr3t-value"));
    assert.ok(created.metadata?.uid);
  },
);

test(
  "a running pod's configMap, secret and downwardAPI volumes follow their sources (atomic swap), a subPath file and an immutable configMap do not; secret data never logged",
  { skip: needsSandbox },
  async (t) => {
    const { logger, lines } = memoryLogger({ verbosity: 10 });
    const { client, streams } = await setup(t, { logger });
    const configMap = (name: string, data: Record<string, string>, immutable?: boolean): ConfigMap => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: NS },
      data,
      ...(immutable ? { immutable } : {}),
    });
    await client.create<ConfigMap>(GVR.configMaps, configMap("live", { key: "v1", sub: "s1" }));
    await client.create<ConfigMap>(GVR.configMaps, configMap("frozen", { key: "f1" }, true));
    await client.create<Secret>(GVR.secrets, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "pw", namespace: NS },
      stringData: { password: "first-s3cret" },
    });
    await create(
      client,
      podOf("refresh", {
        volumes: [
          { name: "cfg", configMap: { name: "live" } },
          { name: "frozen", configMap: { name: "frozen" } },
          { name: "sec", secret: { secretName: "pw" } },
          {
            name: "info",
            downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] },
          },
          {
            name: "all",
            projected: { sources: [{ secret: { name: "pw" } }, { configMap: { name: "live" } }] },
          },
        ],
        containers: [
          sh("app", "trap 'exit 0' TERM; sleep 3600 & wait", {
            volumeMounts: [
              { name: "cfg", mountPath: "/cfg" },
              { name: "cfg", mountPath: "/sub.txt", subPath: "sub" },
              { name: "frozen", mountPath: "/frozen" },
              { name: "sec", mountPath: "/sec" },
              { name: "info", mountPath: "/info" },
              { name: "all", mountPath: "/all" },
            ],
          }),
        ],
      }),
    );
    await waitPod(client, "refresh", "Running", (p) => status(p, "app")?.state?.running !== undefined);
    const read = async () => {
      const result = await exec(streams, "refresh", "app", [
        "sh",
        "-c",
        "for f in /cfg/key /sub.txt /frozen/key /sec/password /info/labels /all/password /all/key; do printf '%s|' \"$(cat $f)\"; done",
      ]);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout;
    };
    assert.equal(await read(), 'v1|s1|f1|first-s3cret|app="refresh"|first-s3cret|v1|');

    // A reader that enters ..data once per round while the volume is swapped sees the old set
    // or the new one (or, when the old dir is removed under it, part of the old), never a mix.
    const watcher = exec(streams, "refresh", "app", [
      "sh",
      "-c",
      'i=0; while [ $i -lt 20000 ]; do p=$(cd /cfg/..data 2>/dev/null && echo "$(cat key 2>/dev/null)$(cat sub 2>/dev/null)"); echo "$p"; [ "$p" = v2s2 ] && break; i=$((i+1)); done',
    ]);
    await client.update<ConfigMap>(GVR.configMaps, configMap("live", { key: "v2", sub: "s2" }));
    await client.patch(GVR.secrets, "pw", { stringData: { password: "second-s3cret" } }, { namespace: NS });
    await client.patch(GVR.pods, "refresh", { metadata: { labels: { tier: "two" } } }, { namespace: NS });
    // An immutable object is not watched: one deleted and made again with new data is not picked up.
    await client.delete(GVR.configMaps, "frozen", { namespace: NS });
    await client.create<ConfigMap>(GVR.configMaps, configMap("frozen", { key: "f2" }, true));
    const want = 'v2|s1|f1|second-s3cret|app="refresh"\ntier="two"|second-s3cret|v2|';
    let seen = "";
    await until(
      async () => (seen = await read()) === want,
      `volumes refreshed (last read ${JSON.stringify(seen)})`,
    );
    const rounds = (await watcher).stdout.trim().split("\n");
    assert.equal(rounds.at(-1), "v2s2");
    for (const round of new Set(rounds)) assert.match(round, /^(v1(s1)?|v2s2|)$/, "a mixed read");
    // A later refresh (another change) still leaves the subPath file and the immutable one alone.
    await client.update<ConfigMap>(GVR.configMaps, configMap("live", { key: "v3", sub: "s3" }));
    await until(async () => (seen = await read()).startsWith("v3|"), "second refresh");
    assert.match(seen, /^v3\|s1\|f1\|/);
    // A source deleted while the pod runs: the files stay, a FailedMount event says why.
    await client.delete(GVR.configMaps, "live", { namespace: NS });
    await until(
      async () =>
        (await events(client)).some(
          (e) =>
            e.reason === "FailedMount" &&
            e.message === 'MountVolume.SetUp failed for volume "cfg" : configmap "live" not found',
        ),
      "FailedMount event for the deleted configmap",
    );
    assert.match(await read(), /^v3\|s1\|/);
    for (const line of lines) assert.ok(!/s3cret/.test(line), `secret data in a log line: ${line}`);
    for (const event of await events(client)) assert.ok(!(event.message ?? "").includes("s3cret"));
  },
);

test(
  "the sandbox: host root read-only, another pod's volume not visible, own PID namespace; exec runs in it and returns the exit code",
  { skip: needsSandbox },
  async (t) => {
    const { client, root, streams } = await setup(t);
    const mounts = [{ name: "data", mountPath: "/data" }];
    const other = await create(
      client,
      podOf("other", {
        volumes: [{ name: "data", emptyDir: {} }],
        containers: [sh("app", "echo other-secret > /data/mine; sleep 3600", { volumeMounts: mounts })],
      }),
    );
    await create(
      client,
      podOf("probe", {
        volumes: [{ name: "data", emptyDir: {} }],
        containers: [sh("app", "trap 'exit 0' TERM; sleep 3600 & wait", { volumeMounts: mounts })],
      }),
    );
    await waitPod(client, "other", "other Running", (p) => status(p, "app")?.state?.running !== undefined);
    await waitPod(client, "probe", "probe Running", (p) => status(p, "app")?.state?.running !== undefined);
    const otherDir = join(
      root,
      "pods",
      other.metadata?.uid ?? "",
      "volumes",
      "kubernetes.io~empty-dir",
      "data",
    );
    await until(
      async () => (await readFile(join(otherDir, "mine"), "utf8").catch(() => "")) === "other-secret\n",
      "other pod wrote its volume",
    );

    // Writes outside the volumes are refused by the read-only root; the volume is writable.
    const outside = await exec(streams, "probe", "app", ["sh", "-c", "echo x > /etc/csikit-escape"]);
    assert.notEqual(outside.code, 0);
    assert.match(outside.stderr, /Read-only file system/);
    const inside = await exec(streams, "probe", "app", [
      "sh",
      "-c",
      "echo kept > /data/file && cat /data/file",
    ]);
    assert.deepEqual([inside.code, inside.stdout], [0, "kept\n"]);
    // The node's root dir (every pod's volumes) is an empty dir in the sandbox.
    const peek = await exec(streams, "probe", "app", ["sh", "-c", `ls -A ${root}; cat ${otherDir}/mine`]);
    assert.notEqual(peek.code, 0);
    assert.equal(peek.stdout, "");
    assert.doesNotMatch(peek.stdout + peek.stderr, /other-secret/);
    // Own PID namespace: the container's command is pid 1, and only its processes are there.
    const pids = await exec(streams, "probe", "app", [
      "sh",
      "-c",
      "cat /proc/1/cmdline | tr '\\0' ' '; echo; hostname",
    ]);
    assert.match(pids.stdout, /^sh -c trap/);
    assert.match(pids.stdout, /\nprobe\n$/);
    // Exit code and stdin.
    assert.equal((await exec(streams, "probe", "app", ["sh", "-c", "exit 42"])).code, 42);
    assert.equal((await exec(streams, "probe", "app", ["cat"], "from stdin")).stdout, "from stdin");
    await assert.rejects(
      exec(streams, "probe", "nope", ["true"]),
      (e: Error) => e.name === "RuntimeNotFoundError",
    );
  },
);

/** Terminal sizes pushed by the test, as a client's resize stream delivers them. */
function sizeQueue() {
  const items: { width: number; height: number }[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  return {
    push(size: { width: number; height: number }) {
      items.push(size);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (items.length > 0) yield items.shift()!;
        if (ended) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}

test(
  "exec with a tty: the client's first size is the terminal's from the start, a later resize changes it (stty size reads it back)",
  { skip: needsSandbox },
  async (t) => {
    const { client, streams } = await setup(t);
    await create(client, podOf("tty", { containers: [sh("app", "trap 'exit 0' TERM; sleep 3600 & wait")] }));
    await waitPod(client, "tty", "Running", (p) => status(p, "app")?.state?.running !== undefined);
    const session = (command: string[], sizes: ReturnType<typeof sizeQueue>, stdin: PassThrough) => {
      const stdout = new PassThrough();
      let out = "";
      stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
      const done = streams.exec(
        { namespace: NS, pod: "tty", container: "app" },
        command,
        { stdin, stdout, tty: true, resize: sizes },
        AbortSignal.timeout(30_000),
      );
      return { done, output: () => out };
    };

    // The whole command is `stty size`: it must see the size sent with the session.
    const first = sizeQueue();
    first.push({ width: 100, height: 30 });
    const once = session(["stty", "size"], first, new PassThrough());
    assert.equal(await once.done, 0);
    first.end();
    assert.equal(once.output().trim(), "30 100");

    // An interactive shell: a resize while it runs is what its terminal reports next.
    const sizes = sizeQueue();
    const stdin = new PassThrough();
    sizes.push({ width: 80, height: 24 });
    const shell = session(["sh"], sizes, stdin);
    stdin.write("stty size\n");
    // The answer ends a line that starts after the prompt ("# 24 80") or after the echoed
    // command ("# stty size\r\n24 80"), whichever the shell printed first.
    const saw = (rows: number, cols: number) =>
      new RegExp(`(?:^|[\\s#])${rows} ${cols}\\r\\n`).test(shell.output());
    await until(() => saw(24, 80), "first size in the shell");
    sizes.push({ width: 132, height: 43 });
    await until(() => {
      stdin.write("stty size\n");
      return saw(43, 132);
    }, "size after the resize");
    // A size no uint16 pair can carry is ignored, not applied.
    sizes.push({ width: -1, height: 1e9 });
    sizes.push({ width: 90, height: 20 });
    await until(() => {
      stdin.write("stty size\n");
      return saw(20, 90);
    }, "size after the second resize");
    stdin.write("exit 3\n");
    assert.equal(await shell.done, 3);
    sizes.end();
  },
);

test(
  "mountPropagation: HostToContainer sees the host's later mounts, None does not; Bidirectional refused by the API server, a privileged container by the node with an event",
  { skip: needsSandbox },
  async (t) => {
    const { client, root, streams } = await setup(t);
    const created = await create(
      client,
      podOf("propagation", {
        volumes: [{ name: "data", emptyDir: {} }],
        containers: [
          sh("app", "mkdir -p /none/sub; trap 'exit 0' TERM; sleep 3600 & wait", {
            volumeMounts: [
              { name: "data", mountPath: "/h2c", mountPropagation: "HostToContainer" },
              { name: "data", mountPath: "/none" },
            ],
          }),
        ],
      }),
    );
    await waitPod(client, "propagation", "Running", (p) => status(p, "app")?.state?.running !== undefined);
    const sub = join(
      root,
      "pods",
      created.metadata?.uid ?? "",
      "volumes",
      "kubernetes.io~empty-dir",
      "data",
      "sub",
    );
    await until(async () => (await readdir(sub).catch(() => undefined)) !== undefined, "sub dir made");
    // A mount the host makes below the volume after the container started.
    await execFileAsync("mount", ["-t", "tmpfs", "csikit-propagation-test", sub]);
    defer(t, () => execFileAsync("umount", [sub]));
    await writeFile(join(sub, "seen"), "from-host");
    const look = await exec(streams, "propagation", "app", [
      "sh",
      "-c",
      "cat /h2c/sub/seen; echo; ls -A /none/sub | wc -l",
    ]);
    assert.equal(look.stdout, "from-host\n0\n", look.stderr);

    // Bidirectional: only for a privileged container (the API server's validation) ...
    const bidirectional = (privileged: boolean) =>
      podOf(privileged ? "bidi-privileged" : "bidi", {
        volumes: [{ name: "data", emptyDir: {} }],
        containers: [
          sh("app", "sleep 3600", {
            ...(privileged ? { securityContext: { privileged: true } } : {}),
            volumeMounts: [{ name: "data", mountPath: "/data", mountPropagation: "Bidirectional" }],
          }),
        ],
      });
    await assert.rejects(
      create(client, bidirectional(false)),
      /Bidirectional mount propagation is available only to privileged containers/,
    );
    // ... and a privileged container is one the sandbox cannot run: refused with an event.
    await create(client, bidirectional(true));
    const refused = await waitPod(
      client,
      "bidi-privileged",
      "privileged container refused",
      (p) => status(p, "app")?.state?.waiting?.reason === "CreateContainerConfigError",
    );
    assert.match(
      String(status(refused, "app")?.state?.waiting?.message),
      /is privileged.*drops every capability/,
    );
    await until(
      async () =>
        (await events(client)).some(
          (e) =>
            e.involvedObject?.name === "bidi-privileged" &&
            e.reason === "Failed" &&
            /privileged/.test(e.message ?? ""),
        ),
      "Failed event for the privileged container",
    );
  },
);

test(
  "exec into a container without a command runs in a fresh sandbox with its volumes",
  { skip: needsSandbox },
  async (t) => {
    const { client, streams } = await setup(t);
    await create(
      client,
      podOf("idle-exec", {
        volumes: [{ name: "data", emptyDir: {} }],
        containers: [{ name: "app", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] }],
      }),
    );
    await waitPod(client, "idle-exec", "Running", (p) => p.status?.phase === "Running");
    const write = await exec(streams, "idle-exec", "app", [
      "sh",
      "-c",
      "echo hi > /data/f; cat /data/f; touch /usr/x",
    ]);
    assert.equal(write.stdout, "hi\n");
    assert.notEqual(write.code, 0, "the host root is read-only there too");
  },
);

test(
  "graceful termination: SIGTERM first, SIGKILL after terminationGracePeriodSeconds; deletion waits for the processes",
  { skip: needsSandbox },
  async (t) => {
    const clock = new FakeClock(Date.now());
    const { client, streams } = await setup(t, { clock });
    // One container stops on SIGTERM; the other ignores it and must be killed.
    await create(
      client,
      podOf("stop", {
        terminationGracePeriodSeconds: 30,
        containers: [
          sh("polite", "trap 'echo got TERM; exit 0' TERM; echo up; while true; do sleep 0.1; done"),
          sh("stubborn", "trap 'echo ignoring TERM' TERM; echo up; while true; do sleep 0.1; done"),
        ],
      }),
    );
    await waitPod(
      client,
      "stop",
      "both running",
      (p) =>
        (p.status?.containerStatuses ?? []).every((s) => s.state?.running !== undefined) &&
        (p.status?.containerStatuses ?? []).length === 2,
    );
    await until(async () => (await logsOf(streams, "stop", "stubborn")) === "up\n", "stubborn started");
    await client.delete(GVR.pods, "stop", { namespace: NS });
    await until(
      async () => (await logsOf(streams, "stop", "stubborn")).includes("ignoring TERM"),
      "stubborn got SIGTERM",
    );
    const pod = await waitPod(
      client,
      "stop",
      "polite stopped",
      (p) => status(p, "polite")?.state?.terminated !== undefined,
    );
    assert.equal(status(pod, "polite")?.state?.terminated?.exitCode, 0);
    assert.ok(status(pod, "stubborn")?.state?.running, "still running inside its grace period");
    assert.ok(await getPod(client, NS, "stop"), "the pod stays while a process runs");
    await clock.advance(30_000);
    await until(
      async () => (await getPod(client, NS, "stop")) === undefined,
      "pod deleted once the processes are gone",
    );
    const killed = (await events(client)).filter((e) => e.reason === "Killing").map((e) => e.message);
    assert.deepEqual(killed.sort(), ["Stopping container polite", "Stopping container stubborn"]);
    void pod;
  },
);

test(
  "a CSI volume bound at its mountPath: subPath and subPathExpr inside it, readOnly refused writes; logs -f follows until exit",
  { skip: needsSandbox },
  async (t) => {
    const { client, root, streams } = await setup(t, { csiDriver: true });
    const created = await create(
      client,
      podOf("csi", {
        restartPolicy: "Never",
        volumes: [{ name: "data", csi: { driver: DRIVER } }],
        containers: [
          sh(
            "app",
            [
              "echo whole > /data/whole",
              "echo in-sub > /sub/file",
              "echo by-expr > /expr/file",
              "(echo no > /ro/file) 2>/dev/null || echo ro-refused",
              "cat /ro/whole",
              "while [ ! -e /data/go-on ]; do sleep 0.1; done",
              "echo finished",
            ].join("; "),
            {
              env: [{ name: "POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
              volumeMounts: [
                { name: "data", mountPath: "/data" },
                { name: "data", mountPath: "/sub", subPath: "a/b" },
                { name: "data", mountPath: "/expr", subPathExpr: "by-$(POD)" },
                { name: "data", mountPath: "/ro", readOnly: true },
              ],
            },
          ),
        ],
      }),
    );
    const uid = created.metadata?.uid ?? "";
    await waitPod(client, "csi", "container running", (p) => status(p, "app")?.state?.running !== undefined);
    const target = join(root, "pods", uid, "volumes", "kubernetes.io~csi", "data", "mount");
    // Follow the log while the container runs: it ends when the container does.
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on("data", (c: Buffer) => chunks.push(c));
    const following = streams.logs(
      { namespace: NS, pod: "csi", container: "app" },
      { follow: true },
      out,
      AbortSignal.timeout(30_000),
    );
    await until(
      () => Buffer.concat(chunks).toString("utf8") === "ro-refused\nwhole\n",
      "followed lines so far",
    ).catch((error: unknown) => {
      console.log(`# followed: ${JSON.stringify(Buffer.concat(chunks).toString("utf8"))}`);
      throw error;
    });
    await until(
      async () => (await readFile(join(target, "a/b/file"), "utf8").catch(() => "")) === "in-sub\n",
      "subPath write",
    );
    assert.equal(await readFile(join(target, "by-csi/file"), "utf8"), "by-expr\n");
    assert.equal(await readFile(join(target, "whole"), "utf8"), "whole\n");
    // The test can write the volume from the host: the container sees it and finishes.
    await writeFile(join(target, "go-on"), "");
    await following;
    assert.equal(Buffer.concat(chunks).toString("utf8"), "ro-refused\nwhole\nfinished\n");
    await waitPod(client, "csi", "Succeeded", (p) => p.status?.phase === "Succeeded");
  },
);

/** `kubectl get pods` columns (NAME READY STATUS RESTARTS) of one pod, as a user reads them. */
async function columns(kubeconfig: string, name: string): Promise<string[]> {
  const result = await kubectl(["get", "pods", "-n", NS, name, "--no-headers"], { kubeconfig });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim().split(/\s+/);
}

test("a block volume is mapped at its volumeDevices devicePath", { skip: needsSandbox }, async (t) => {
  const { client, root } = await setup(t, { csiDriver: true });
  const pv = persistentVolume("pv-raw", { driver: DRIVER, handle: "raw-1", block: true });
  await boundClaim(client, NS, "raw", pv, { block: true });
  const created = await create(
    client,
    podOf("block", {
      volumes: [{ name: "disk", persistentVolumeClaim: { claimName: "raw" } }],
      containers: [
        sh("app", "echo on-the-device > /dev/xvda; sleep 3600", {
          volumeDevices: [{ name: "disk", devicePath: "/dev/xvda" }],
        }),
      ],
    }),
  );
  await waitPod(client, "block", "Running", (p) => status(p, "app")?.state?.running !== undefined);
  // The scripted driver publishes a plain file as the "device": what the container wrote is in it.
  const uid = created.metadata?.uid ?? "";
  const published = join(root, "plugins/kubernetes.io/csi/volumeDevices/publish/pv-raw", uid);
  await until(
    async () => (await readFile(published, "utf8").catch(() => "")) === "on-the-device\n",
    "written through the device path",
  );
});

test(
  "a pod ended from outside (phase Failed, as up's shutdown drain does) has its containers stopped and stays Failed",
  { skip: needsSandbox },
  async (t) => {
    const { client, streams } = await setup(t);
    await create(
      client,
      podOf("ended", { terminationGracePeriodSeconds: 2, containers: [sh("app", "sleep 3600")] }),
    );
    await waitPod(client, "ended", "Running", (p) => status(p, "app")?.state?.running !== undefined);
    await client.patch(
      GVR.pods,
      "ended",
      {
        status: {
          phase: "Failed",
          reason: "Terminated",
          message: "Pod was terminated in response to imminent node shutdown.",
        },
      },
      { namespace: NS, subresource: "status" },
    );
    // sleep as pid 1 ignores SIGTERM: killed after the 2s grace period.
    const pod = await waitPod(
      client,
      "ended",
      "container stopped",
      (p) => status(p, "app")?.state?.terminated !== undefined,
    );
    assert.equal(pod.status?.phase, "Failed");
    assert.equal(status(pod, "app")?.state?.terminated?.exitCode, 137);
    await assert.rejects(
      exec(streams, "ended", "app", ["true"]),
      (e: Error) => e.name === "RuntimeNotFoundError",
    );
  },
);
