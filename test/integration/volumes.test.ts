// Cross-component proof of the volume machinery (issue 7 §6): in one process the real API
// server, `runControllers` with every loop, two virtual nodes (own root dirs, own zones) and
// the real hostpath driver (one controller instance, one node plugin per node registered
// through its node's plugins_registry socket), the real external-attacher (`startAttacher`,
// through a recording tap in front of the controller service) and a test stand-in for the
// external-provisioner (./stand-ins.ts). Scenarios: registration and unregistration,
// static binding through detach, dynamic provisioning (Immediate), a generic ephemeral
// volume, WaitForFirstConsumer with allowedTopologies, raw block, secrets and pod info reaching the driver, and a restart of
// the controllers mid-operation. A recording tap (./csi-tap.ts) sits between each node and its
// plugin so the scenarios can assert what the node sent and that nothing was done twice.
//
// As root this file re-executes itself under `unshare -m --propagation private`, so every
// mount vanishes with that namespace whatever happens; unprivileged, the scenarios that need
// mounts are skipped saying why, the others run.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import {
  ANNOTATIONS,
  GVR,
  attacherFinalizer,
  type CSINode,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
  type VolumeAttachment,
} from "../../src/api/index.ts";
import { Flags, LOGGING_FLAGS, memoryLogger, parseFlags } from "../../src/base/index.ts";
import { CsiClient } from "../../src/csi/index.ts";
import { runLoops } from "../harness/controllers.ts";
import { serveHostpathDriver, TOPOLOGY_KEY_NODE } from "../../src/drivers/index.ts";
import { startTestServer } from "../harness/kube-server.ts";
import { CORE_EVENTS, isNotFound, type CoreEvent, type KubeClient } from "../../src/kube/index.ts";
import { csiDriver, getPod, podRunning, runNode, serveRegistration } from "../harness/node.ts";
import { attachmentName, KubeletPaths, POD_INFO_KEYS, uniqueVolumeName } from "../../src/node/index.ts";
import { RESIZER_FLAGS, resizerOptionsFromFlags, startResizer } from "../../src/sidecars/resizer/index.ts";
import {
  ATTACHER_FLAGS,
  attacherOptionsFromFlags,
  startAttacher,
} from "../../src/sidecars/attacher/index.ts";
import { serveCsiTap, type CsiTap } from "../harness/csi-tap.ts";
import { startProvisionerStandIn } from "../harness/stand-ins.ts";
import { until } from "../harness/until.ts";

const NAMESPACE_ENV = "CSIKIT_INTEG_IN_MOUNT_NS";
const isRoot = process.getuid?.() === 0;
const inNamespace = process.env[NAMESPACE_ENV] === "1";
const hasUnshare = spawnSync("unshare", ["--version"]).status === 0;
const MOUNTS = isRoot && inNamespace;
const NO_MOUNTS = "needs root to mount (run the tests as root, or in `unshare -rm`)";
const DRIVER = "hostpath.csi.k8s.io";
const NS = "default";
const ZONE_KEY = "topology.kubernetes.io/zone";
const NODES = [
  { name: "node-a", zone: "zone-a" },
  { name: "node-b", zone: "zone-b" },
] as const;
/** Generous: the machine is shared and loaded. */
const LONG = 90_000;
const CLI = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

async function mountPointsUnder(dir: string): Promise<string[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  return text
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(dir + "/"));
}

function loopsUnder(dir: string): string[] {
  const out = spawnSync("losetup", ["--list", "--noheadings", "--output", "NAME,BACK-FILE"], {
    encoding: "utf8",
  });
  const names: string[] = [];
  for (const line of (out.stdout ?? "").split("\n")) {
    const [name, file] = line.trim().split(/\s+/, 2);
    if (name && file?.startsWith(dir + "/")) names.push(name);
  }
  return names;
}

interface VirtualNode {
  name: string;
  zone: string;
  root: string;
  paths: KubeletPaths;
  /** Stops the agent (gracefully in-process, SIGKILL for a child process); idempotent. */
  stopAgent(): Promise<void>;
  /** Starts the agent again after stopAgent. */
  startAgent(): Promise<void>;
  /** The recording tap in front of the node plugin: what the node registered and calls. */
  tap: CsiTap;
  registration: Awaited<ReturnType<typeof serveRegistration>>;
}

/** The real attacher, with what it asked the driver through the tap. */
interface RealAttacher {
  /** ControllerPublishVolume calls per VolumeAttachment name (as counted at the tap). */
  published: { get(vaName: string): number };
  /** Its log lines (-v 4), for diagnostics. */
  logs: string[];
}

interface Cluster {
  client: KubeClient;
  csi: CsiClient;
  /** The API server's kubeconfig and the controller driver's socket, for sidecars run by a scenario. */
  kubeconfig: string;
  controllerSocket: string;
  nodes: VirtualNode[];
  attacher: RealAttacher;
  provisioner: ReturnType<typeof startProvisionerStandIn>;
  /** Stops the current controllers (idempotent). */
  stopControllers(): Promise<void>;
  startControllers(): void;
}

/**
 * Brings the whole cluster up and runs `scenario`; tears everything down in reverse order
 * (stand-ins, controllers, node agents, drivers, mounts, loop devices, API server, temp dir)
 * whether the scenario passed or not.
 */
async function withCluster(
  t: TestContext,
  scenario: (c: Cluster) => Promise<void>,
  options: { childAgentOn?: string } = {},
): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), "csikit-integ-"));
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = (fn: () => Promise<unknown>): void => {
    cleanups.push(async () => void (await fn()));
  };
  cleanup(() => rm(base, { recursive: true, force: true }));
  try {
    const api = await startTestServer();
    cleanup(() => api.stop());
    cleanup(async () => {
      if (!MOUNTS) return;
      for (const point of (await mountPointsUnder(base)).reverse()) spawnSync("umount", ["-l", point]);
      for (const loop of loopsUnder(base)) spawnSync("losetup", ["-d", loop]);
    });
    const client = api.client();
    await client.create(GVR.csiDrivers, csiDriver(DRIVER, { attachRequired: true, podInfoOnMount: true }));
    const stateDir = join(base, "state");
    const roots = NODES.map((n) => join(base, n.name));
    const controllerDriver = await serveHostpathDriver({
      endpoint: join(base, "controller.sock"),
      nodeId: "controller",
      stateDir,
      nodeService: false,
      allowedPathRoots: roots,
      shutdownGraceMs: 1000,
    });
    cleanup(() => controllerDriver.close());
    const csi = CsiClient.connect(controllerDriver.path);
    cleanup(async () => csi.close());

    const nodes: VirtualNode[] = [];
    for (const [i, spec] of NODES.entries()) {
      const root = roots[i]!;
      await mkdir(root, { recursive: true });
      const plugin = await serveHostpathDriver({
        endpoint: join(base, `${spec.name}.sock`),
        nodeId: spec.name,
        stateDir,
        controllerService: false,
        allowedPathRoots: [root],
        shutdownGraceMs: 1000,
      });
      cleanup(() => plugin.close());
      // One agent may run as a `csikit node` child process, so a scenario can kill -9 it.
      let agent: { stop(): Promise<void> } | undefined;
      const startAgent = async (): Promise<void> => {
        assert.equal(agent, undefined, `agent of ${spec.name} already running`);
        if (options.childAgentOn === spec.name) {
          agent = startAgentProcess(t, {
            kubeconfig: api.kubeconfigPath,
            nodeName: spec.name,
            root,
            zone: spec.zone,
          });
        } else {
          agent = await runNode(t, client, {
            nodeName: spec.name,
            rootDir: root,
            labels: { [ZONE_KEY]: spec.zone },
          });
        }
      };
      const stopAgent = async (): Promise<void> => {
        const current = agent;
        agent = undefined;
        await current?.stop();
      };
      await startAgent();
      cleanup(stopAgent);
      const tap = await serveCsiTap({ endpoint: join(base, `${spec.name}-tap.sock`), target: plugin.path });
      cleanup(() => tap.close());
      const registration = await serveRegistration(t, {
        rootDir: root,
        driverName: DRIVER,
        endpoint: tap.path,
      });
      cleanup(() => registration.server.close());
      nodes.push({
        name: spec.name,
        zone: spec.zone,
        root,
        paths: new KubeletPaths(root),
        stopAgent,
        startAgent,
        tap,
        registration,
      });
    }
    for (const node of nodes)
      await until(() => driverEntry(client, node.name), `${node.name} registered ${DRIVER}`, {
        timeoutMs: LONG,
      });

    let loops: ReturnType<typeof runLoops> | undefined;
    const stopControllers = async (): Promise<void> => {
      const current = loops;
      loops = undefined;
      await current?.stop();
    };
    const startControllers = (): void => {
      assert.equal(loops, undefined, "controllers already running");
      loops = runLoops(client);
    };
    cleanup(stopControllers);
    startControllers();
    // The real attacher, through a tap that counts what it asks of the controller service.
    const controllerTap = await serveCsiTap({
      endpoint: join(base, "controller-tap.sock"),
      target: controllerDriver.path,
      controller: true,
    });
    cleanup(() => controllerTap.close());
    const { logger: attacherLogger, lines: attacherLogs } = memoryLogger({ verbosity: 4 });
    const attacherHandle = startAttacher({
      ...attacherOptionsFromFlags(
        new Flags(
          parseFlags(ATTACHER_FLAGS, [
            `--csi-address=${controllerTap.path}`,
            `--kubeconfig=${api.kubeconfigPath}`,
            "--kube-api-qps=1000",
            "--kube-api-burst=1000",
            "--retry-interval-start=100ms",
            "--retry-interval-max=2s",
          ]),
        ),
      ),
      logger: attacherLogger,
    });
    cleanup(() => attacherHandle.close());
    const attacher: RealAttacher = {
      logs: attacherLogs,
      published: {
        get: (vaName) =>
          controllerTap
            .callsOf("ControllerPublishVolume")
            .filter(
              ({ request }) =>
                attachmentName(String(request.volumeId), DRIVER, String(request.nodeId)) === vaName,
            ).length,
      },
    };
    const provisioner = startProvisionerStandIn({ client, csi, driver: DRIVER });
    cleanup(() => provisioner.stop());
    const cluster: Cluster = {
      client,
      csi,
      kubeconfig: api.kubeconfigPath,
      controllerSocket: controllerDriver.path,
      nodes,
      attacher,
      provisioner,
      stopControllers,
      startControllers,
    };
    try {
      await scenario(cluster);
    } catch (error) {
      const errors = provisioner.errors.slice(-3);
      if (errors.length > 0) t.diagnostic(`stand-in errors: ${errors.join(" | ")}`);
      const attacherLines = attacher.logs.slice(-5);
      if (attacherLines.length > 0) t.diagnostic(`attacher: ${attacherLines.join("\n")}`);
      throw error;
    }
  } finally {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (error) {
        t.diagnostic(`cleanup: ${String(error)}`);
      }
    }
  }
}

/** `csikit node` as a child process; stop() kills it with SIGKILL and waits for it to exit. */
function startAgentProcess(
  t: TestContext,
  options: { kubeconfig: string; nodeName: string; root: string; zone: string },
): { stop(): Promise<void> } {
  const child = spawn(
    process.execPath,
    [
      CLI,
      "node",
      `--node-name=${options.nodeName}`,
      `--root-dir=${options.root}`,
      `--kubeconfig=${options.kubeconfig}`,
      `--node-labels=${ZONE_KEY}=${options.zone}`,
      "--plugin-rescan-interval=500ms",
      "--port=0",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      if (stderr.includes("failed")) t.diagnostic(`csikit node ${options.nodeName}: ${stderr.slice(-2000)}`);
    },
  };
}

async function orUndefined<T>(get: Promise<T>): Promise<T | undefined> {
  try {
    return await get;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

async function driverEntry(client: KubeClient, nodeName: string) {
  const csiNode = await orUndefined(client.get<CSINode>(GVR.csiNodes, nodeName));
  return csiNode?.spec.drivers.find((d) => d.name === DRIVER);
}

function podWithClaim(name: string, claimName: string, options: { block?: boolean } = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: {
      containers: [
        {
          name: "app",
          image: "busybox",
          ...(options.block ? { volumeDevices: [{ name: "vol", devicePath: "/dev/xvda" }] } : {}),
        },
      ],
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName } }],
    },
  };
}

function newClaim(name: string, storageClassName: string, options: { block?: boolean } = {}) {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NS },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName,
      volumeMode: options.block ? "Block" : "Filesystem",
    },
  } satisfies PersistentVolumeClaim;
}

function storageClass(name: string, extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name },
    provisioner: DRIVER,
    reclaimPolicy: "Retain",
    volumeBindingMode: "Immediate",
    ...extra,
  };
}

async function boundClaim(client: KubeClient, name: string): Promise<PersistentVolumeClaim> {
  return until(
    async () => {
      const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, name, {
        namespace: NS,
      });
      return claim.status?.phase === "Bound" ? claim : undefined;
    },
    `claim ${name} Bound`,
    { timeoutMs: LONG },
  );
}

async function scheduledNode(client: KubeClient, podName: string): Promise<string> {
  return until(async () => (await getPod(client, NS, podName))?.spec?.nodeName, `pod ${podName} scheduled`, {
    timeoutMs: LONG,
  });
}

function nodeOf(c: Cluster, name: string): VirtualNode {
  const node = c.nodes.find((n) => n.name === name);
  assert.ok(node, `unknown node ${name}`);
  return node;
}

/**
 * The pod Running with its volume attached, staged and published on `node`, then deleted:
 * unpublished, unstaged, detached, and the node's volume lists empty again.
 */
async function runAndTearDown(
  t: TestContext,
  c: Cluster,
  podName: string,
  pvName: string,
  node: VirtualNode,
  options: { block?: boolean } = {},
): Promise<void> {
  const pv = await c.client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
  const handle = pv.spec?.csi?.volumeHandle ?? "";
  const vaName = attachmentName(handle, DRIVER, node.name);
  const va = await until(
    async () => {
      const current = await orUndefined(c.client.get<VolumeAttachment>(GVR.volumeAttachments, vaName));
      return current?.status?.attached ? current : undefined;
    },
    "VolumeAttachment attached",
    { timeoutMs: LONG },
  );
  assert.equal(va.spec.source.persistentVolumeName, pvName);
  assert.equal(va.spec.nodeName, node.name);
  assert.ok(
    va.metadata?.finalizers?.includes(attacherFinalizer(DRIVER)),
    "attacher finalizer on the attachment",
  );
  const stage = await until(
    () => node.tap.callsOf("NodeStageVolume").find((call) => call.request.volumeId === handle),
    "NodeStageVolume called",
    { timeoutMs: LONG },
  );
  assert.deepEqual(
    stage.request.publishContext,
    va.status?.attachmentMetadata ?? {},
    "the attachment's metadata reaches NodeStage as publish_context",
  );
  assert.equal(
    stage.request.stagingTargetPath,
    options.block ? node.paths.blockStagingTarget(pvName) : node.paths.stagingTarget(DRIVER, handle),
  );
  const unique = uniqueVolumeName(DRIVER, handle);
  if (MOUNTS) {
    const running = await until(() => podRunning(c.client, NS, podName), `pod ${podName} Running`, {
      timeoutMs: LONG,
    });
    const uid = running.metadata?.uid ?? "";
    const mounts = await mountPointsUnder(node.root);
    if (options.block) {
      assert.ok(
        mounts.includes(node.paths.blockPublishTarget(pvName, uid)),
        `block published: ${mounts.join(", ")}`,
      );
    } else {
      const target = node.paths.publishTarget(uid, pvName);
      const staging = node.paths.stagingTarget(DRIVER, handle);
      assert.ok(mounts.includes(staging), `staged: ${mounts.join(", ")}`);
      assert.ok(mounts.includes(target), `published: ${mounts.join(", ")}`);
      await writeFile(join(target, "hello.txt"), "hi");
      assert.equal(await readFile(join(staging, "hello.txt"), "utf8"), "hi", "one volume behind both mounts");
    }
    await until(
      async () => {
        const status = (await c.client.get<Node>(GVR.nodes, node.name)).status;
        return (
          (status?.volumesInUse ?? []).includes(unique) &&
          (status?.volumesAttached ?? []).some((v) => v.name === unique)
        );
      },
      "node reports the volume attached and in use",
      { timeoutMs: LONG },
    );
  } else {
    // Unprivileged the driver cannot stage, so the pod never runs; attach and detach still can.
    t.diagnostic(`stage/publish/Running part skipped: ${NO_MOUNTS}`);
    await until(
      async () =>
        ((await c.client.get<Node>(GVR.nodes, node.name)).status?.volumesAttached ?? []).some(
          (v) => v.name === unique,
        ),
      "node reports the volume attached",
      { timeoutMs: LONG },
    );
  }
  const other = c.nodes.find((n) => n !== node);
  if (other) assert.deepEqual(await mountPointsUnder(other.root), [], "nothing mounted on the other node");

  await c.client.delete(GVR.pods, podName, { namespace: NS });
  await until(async () => (await getPod(c.client, NS, podName)) === undefined, `pod ${podName} gone`, {
    timeoutMs: LONG,
  });
  await until(async () => (await mountPointsUnder(node.root)).length === 0, "unpublished and unstaged", {
    timeoutMs: LONG,
  });
  await until(
    async () => (await orUndefined(c.client.get(GVR.volumeAttachments, vaName))) === undefined,
    "VolumeAttachment deleted (detached)",
    { timeoutMs: LONG },
  );
  await until(
    async () => {
      const status = (await c.client.get<Node>(GVR.nodes, node.name)).status;
      return (status?.volumesInUse ?? []).length === 0 && (status?.volumesAttached ?? []).length === 0;
    },
    "node volumesAttached and volumesInUse empty",
    { timeoutMs: LONG },
  );
  if (options.block) assert.deepEqual(loopsUnder(node.root), [], "no loop device left");
  if (MOUNTS) assertOnceEach(node, handle);
}

/** Each of stage, publish, unpublish and unstage reached the driver exactly once for `handle`. */
function assertOnceEach(node: VirtualNode, handle: string): void {
  for (const method of ["NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"]) {
    const calls = node.tap.callsOf(method).filter((call) => call.request.volumeId === handle);
    assert.equal(calls.length, 1, `${method} of ${handle} on ${node.name} called ${calls.length} times`);
  }
}

const SUITE_TIMEOUT = 600_000;

if (isRoot && hasUnshare && !inNamespace) {
  test("volume machinery end to end (in a private mount namespace)", { timeout: SUITE_TIMEOUT }, async () => {
    const env: Record<string, string | undefined> = { ...process.env, [NAMESPACE_ENV]: "1" };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(
      "unshare",
      [
        "-m",
        "--propagation",
        "private",
        process.execPath,
        "--test",
        "--test-reporter=spec",
        fileURLToPath(import.meta.url),
      ],
      { env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, output);
    assert.match(output, /pass 10/, output);
    assert.match(output, /skipped 0/, output);
  });
} else {
  test(
    "registration: CSINode, nodeid annotation and topology labels per node; entries removed when the socket goes, back when it returns",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        for (const node of c.nodes) {
          const entry = await driverEntry(c.client, node.name);
          assert.equal(entry?.nodeID, node.name);
          assert.deepEqual(entry?.topologyKeys, [TOPOLOGY_KEY_NODE]);
          const object = await c.client.get<Node>(GVR.nodes, node.name);
          assert.deepEqual(JSON.parse(object.metadata?.annotations?.[ANNOTATIONS.nodeID.key] ?? "{}"), {
            [DRIVER]: node.name,
          });
          assert.equal(object.metadata?.labels?.[TOPOLOGY_KEY_NODE], node.name);
          assert.equal(object.metadata?.labels?.[ZONE_KEY], node.zone);
          const csiNode = await c.client.get<CSINode>(GVR.csiNodes, node.name);
          assert.equal(csiNode.metadata?.ownerReferences?.[0]?.kind, "Node");
          assert.deepEqual(node.registration.statuses.at(-1), { pluginRegistered: true, error: "" });
        }
        const [a, b] = [c.nodes[0]!, c.nodes[1]!];
        await b.registration.server.close();
        await until(
          async () => (await driverEntry(c.client, b.name)) === undefined,
          "node-b's driver entry removed",
          { timeoutMs: LONG },
        );
        await until(
          async () => {
            const object = await c.client.get<Node>(GVR.nodes, b.name);
            const ids = JSON.parse(object.metadata?.annotations?.[ANNOTATIONS.nodeID.key] ?? "{}") as object;
            return !(DRIVER in ids);
          },
          "node-b's nodeid annotation entry removed",
          { timeoutMs: LONG },
        );
        assert.equal((await driverEntry(c.client, a.name))?.nodeID, a.name, "node-a untouched");
        const nodeB = await c.client.get<Node>(GVR.nodes, b.name);
        assert.equal(
          nodeB.metadata?.labels?.[TOPOLOGY_KEY_NODE],
          b.name,
          "topology labels stay, as the kubelet leaves them",
        );
        const again = await serveRegistration(t, {
          rootDir: b.root,
          driverName: DRIVER,
          endpoint: b.tap.path,
        });
        try {
          await until(
            async () => (await driverEntry(c.client, b.name))?.nodeID === b.name,
            "node-b registered again",
            { timeoutMs: LONG },
          );
        } finally {
          await again.server.close();
        }
      }),
  );

  test(
    "static binding: scheduled by the PV's node affinity, attached, staged, published, Running; deleted: unpublished, unstaged, detached",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        const created = await c.csi.controller.createVolume({
          name: "static-vol",
          capacityRange: { requiredBytes: "1048576" },
          volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
          accessibilityRequirements: { requisite: [{ segments: { [TOPOLOGY_KEY_NODE]: "node-b" } }] },
        });
        await c.client.create<PersistentVolume>(GVR.persistentVolumes, {
          apiVersion: "v1",
          kind: "PersistentVolume",
          metadata: { name: "pv-static" },
          spec: {
            capacity: { storage: "1Mi" },
            accessModes: ["ReadWriteOnce"],
            persistentVolumeReclaimPolicy: "Retain",
            storageClassName: "",
            volumeMode: "Filesystem",
            csi: {
              driver: DRIVER,
              volumeHandle: created.volume?.volumeId ?? "",
              volumeAttributes: created.volume?.volumeContext ?? {},
            },
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  { matchExpressions: [{ key: TOPOLOGY_KEY_NODE, operator: "In", values: ["node-b"] }] },
                ],
              },
            },
          },
        });
        await c.client.create(GVR.persistentVolumeClaims, newClaim("static", ""));
        const claim = await boundClaim(c.client, "static");
        assert.equal(claim.spec?.volumeName, "pv-static");
        await c.client.create(GVR.pods, podWithClaim("static-pod", "static"));
        assert.equal(await scheduledNode(c.client, "static-pod"), "node-b");
        await runAndTearDown(t, c, "static-pod", "pv-static", nodeOf(c, "node-b"));
      }),
  );

  test(
    "expansion with `csikit resizer`: online (NodeExpandVolume at the publish path), then offline (expanded at the next stage)",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        await c.client.create(GVR.storageClasses, storageClass("exp", { allowVolumeExpansion: true }));
        await c.client.create(GVR.persistentVolumeClaims, newClaim("grow", "exp"));
        const claim = await boundClaim(c.client, "grow");
        const pvName = claim.spec?.volumeName ?? "";
        const pv = await c.client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
        const handle = pv.spec?.csi?.volumeHandle ?? "";
        const resizer = new AbortController();
        const resizing = startResizer(
          {
            ...resizerOptionsFromFlags(
              new Flags(
                parseFlags({ ...LOGGING_FLAGS, ...RESIZER_FLAGS }, [
                  `--csi-address=${c.controllerSocket}`,
                  `--kubeconfig=${c.kubeconfig}`,
                  "--kube-api-qps=1000",
                  "--kube-api-burst=1000",
                  "--retry-interval-start=100ms",
                  "--retry-interval-max=2s",
                ]),
              ),
            ),
          },
          resizer.signal,
        );
        t.after(async () => {
          resizer.abort();
          await resizing.catch(() => undefined);
        });
        const grow = (size: string) =>
          c.client.patch(
            GVR.persistentVolumeClaims,
            "grow",
            { spec: { resources: { requests: { storage: size } } } },
            { namespace: NS },
          );
        const status = async () =>
          (await c.client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "grow", { namespace: NS }))
            .status;
        await c.client.create(GVR.pods, podWithClaim("grow-pod", "grow"));
        const node = nodeOf(c, await scheduledNode(c.client, "grow-pod"));
        const expands = () =>
          node.tap.callsOf("NodeExpandVolume").filter((call) => call.request.volumeId === handle);
        if (!MOUNTS) {
          // Unprivileged the pod never runs: the controller part alone.
          t.diagnostic(`node expansion part skipped: ${NO_MOUNTS}`);
          await grow("2Mi");
          await until(
            async () => (await status())?.allocatedResourceStatuses?.storage === "NodeResizePending",
            "NodeResizePending",
            { timeoutMs: LONG },
          );
          const grown = await c.client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
          assert.equal(grown.spec?.capacity?.storage, "2Mi");
          return;
        }
        const running = await until(() => podRunning(c.client, NS, "grow-pod"), "pod Running", {
          timeoutMs: LONG,
        });
        const uid = running.metadata?.uid ?? "";
        // Online: the volume is published; the node expands it where it is mounted.
        await grow("2Mi");
        const online = await until(() => expands()[0], "NodeExpandVolume (online)", { timeoutMs: LONG });
        assert.equal(online.request.volumePath, node.paths.publishTarget(uid, pvName));
        assert.equal(online.request.stagingTargetPath, node.paths.stagingTarget(DRIVER, handle));
        assert.deepEqual(online.request.capacityRange, {
          requiredBytes: String(2 * 1024 * 1024),
          limitBytes: "0",
        });
        const afterOnline = await until(
          async () => {
            const current = await status();
            return current?.capacity?.storage === "2Mi" ? current : undefined;
          },
          "capacity 2Mi",
          { timeoutMs: LONG },
        );
        assert.equal(afterOnline.allocatedResourceStatuses?.storage, undefined);
        // No resize condition left (pvc-protection's Unused condition, on at 1.37, may be there).
        assert.deepEqual(
          (afterOnline.conditions ?? []).filter((c) => c.type !== "Unused"),
          [],
        );
        // Offline: no pod, nothing mounted; the node step waits for the next stage.
        await c.client.delete(GVR.pods, "grow-pod", { namespace: NS });
        await until(async () => (await mountPointsUnder(node.root)).length === 0, "unmounted", {
          timeoutMs: LONG,
        });
        await grow("3Mi");
        await until(
          async () => (await status())?.allocatedResourceStatuses?.storage === "NodeResizePending",
          "NodeResizePending while unpublished",
          { timeoutMs: LONG },
        );
        assert.equal(expands().length, 1, "no NodeExpandVolume while the volume is not staged");
        const stagesBefore = node.tap.callsOf("NodeStageVolume").length;
        await c.client.create(GVR.pods, podWithClaim("grow-pod-2", "grow"));
        await until(async () => (await status())?.capacity?.storage === "3Mi", "capacity 3Mi", {
          timeoutMs: LONG,
        });
        assert.equal(expands().length, 2);
        const newStage = node.tap.callsOf("NodeStageVolume")[stagesBefore];
        assert.ok(newStage, "staged again for the new pod");
        assert.ok(
          node.tap.calls.indexOf(expands()[1]!) > node.tap.calls.indexOf(newStage),
          "expanded after the new stage",
        );
        await c.client.delete(GVR.pods, "grow-pod-2", { namespace: NS });
        await until(async () => (await mountPointsUnder(node.root)).length === 0, "unmounted", {
          timeoutMs: LONG,
        });
      }),
  );

  test(
    "generic ephemeral volume: the ephemeral-volume controller's claim <pod>-<volume>, owned by the pod, provisioned for the scheduler's node, attached, mounted, Running; the pod deleted → torn down, the claim collected; a claim of that name the pod does not control is refused by the controller, attach/detach and the node agent",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        await c.client.create(
          GVR.storageClasses,
          storageClass("eph", { volumeBindingMode: "WaitForFirstConsumer", reclaimPolicy: "Delete" }),
        );
        const pod = await c.client.create<Pod>(GVR.pods, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "eph-pod", namespace: NS },
          spec: {
            containers: [
              { name: "app", image: "busybox", volumeMounts: [{ name: "vol", mountPath: "/data" }] },
            ],
            volumes: [
              {
                name: "vol",
                ephemeral: { volumeClaimTemplate: { spec: newClaim("unused", "eph").spec } },
              },
            ],
          },
        });
        const claim = await boundClaim(c.client, "eph-pod-vol");
        assert.deepEqual(
          claim.metadata?.ownerReferences?.map((ref) => [ref.kind, ref.name, ref.uid, ref.controller]),
          [["Pod", "eph-pod", pod.metadata?.uid, true]],
        );
        const node = nodeOf(c, await scheduledNode(c.client, "eph-pod"));
        assert.equal(
          claim.metadata?.annotations?.[ANNOTATIONS.selectedNode.key],
          node.name,
          "provisioned where the scheduler put the pod",
        );
        await runAndTearDown(t, c, "eph-pod", claim.spec?.volumeName ?? "", node);
        await until(
          async () =>
            (await orUndefined(
              c.client.get(GVR.persistentVolumeClaims, "eph-pod-vol", { namespace: NS }),
            )) === undefined,
          "the claim collected with its pod",
          { timeoutMs: LONG },
        );

        // A pod put on a node directly (no scheduler check) whose ephemeral claim name is taken
        // by a claim it does not control: neither attach/detach nor the node agent uses it.
        await c.client.create(GVR.persistentVolumeClaims, newClaim("squat-vol", "eph"));
        await c.client.create<Pod>(GVR.pods, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "squat", namespace: NS },
          spec: {
            nodeName: node.name,
            containers: [{ name: "app", image: "busybox" }],
            volumes: [
              { name: "vol", ephemeral: { volumeClaimTemplate: { spec: newClaim("unused", "eph").spec } } },
            ],
          },
        });
        const refusal = `PVC ${NS}/squat-vol was not created for pod ${NS}/squat (pod is not owner)`;
        const events = async (reason: string) =>
          (await c.client.list<CoreEvent>(CORE_EVENTS, { namespace: NS })).items.filter(
            (e) => e.involvedObject.name === "squat" && e.reason === reason,
          );
        const failedMount = await until(
          async () => (await events("FailedMount"))[0],
          "the node agent's FailedMount",
          {
            timeoutMs: LONG,
          },
        );
        assert.ok(failedMount.message?.includes(refusal), failedMount.message);
        const failedBinding = await until(
          async () => (await events("FailedBinding"))[0],
          "the controller's FailedBinding",
          {
            timeoutMs: LONG,
          },
        );
        assert.equal(failedBinding.message, `ephemeral volume vol: ${refusal}`);
        assert.equal((await getPod(c.client, NS, "squat"))?.status?.phase, "Pending", "never Running");
        assert.deepEqual((await c.client.list(GVR.volumeAttachments)).items, [], "nothing attached for it");
        await c.client.delete(GVR.pods, "squat", { namespace: NS });
        await until(async () => (await getPod(c.client, NS, "squat")) === undefined, "squat gone", {
          timeoutMs: LONG,
        });
        const squatter = await c.client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "squat-vol", {
          namespace: NS,
        });
        assert.equal(squatter.metadata?.ownerReferences, undefined, "the other claim is left as it was");
      }),
  );

  test(
    "dynamic provisioning with Immediate binding: provisioned, bound, Running on the volume's node, torn down",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        await c.client.create(GVR.storageClasses, storageClass("imm"));
        await c.client.create(GVR.persistentVolumeClaims, newClaim("dyn", "imm"));
        const claim = await boundClaim(c.client, "dyn");
        const pvName = `pvc-${claim.metadata?.uid ?? ""}`;
        assert.equal(claim.spec?.volumeName, pvName);
        assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.storageProvisioner.key], DRIVER);
        const pv = await c.client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
        assert.equal(pv.metadata?.annotations?.[ANNOTATIONS.provisionedBy.key], DRIVER);
        const volumeNode =
          pv.spec?.nodeAffinity?.required?.nodeSelectorTerms[0]?.matchExpressions?.[0]?.values?.[0] ?? "";
        await c.client.create(GVR.pods, podWithClaim("dyn-pod", "dyn"));
        assert.equal(await scheduledNode(c.client, "dyn-pod"), volumeNode, "pod follows the volume");
        await runAndTearDown(t, c, "dyn-pod", pvName, nodeOf(c, volumeNode));
        assert.equal(c.provisioner.created.get("dyn"), 1, "provisioned once");
      }),
  );

  test(
    "WaitForFirstConsumer with allowedTopologies of one zone: pod on that zone's node, selected-node set, PV node affinity matches",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        await c.client.create(
          GVR.storageClasses,
          storageClass("wffc", {
            volumeBindingMode: "WaitForFirstConsumer",
            allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE_KEY, values: ["zone-b"] }] }],
          }),
        );
        await c.client.create(GVR.persistentVolumeClaims, newClaim("late", "wffc"));
        await c.client.create(GVR.pods, podWithClaim("late-pod", "late"));
        const claim = await boundClaim(c.client, "late");
        assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.selectedNode.key], "node-b");
        assert.equal(await scheduledNode(c.client, "late-pod"), "node-b");
        const pvName = claim.spec?.volumeName ?? "";
        const pv = await c.client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
        assert.deepEqual(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms, [
          { matchExpressions: [{ key: TOPOLOGY_KEY_NODE, operator: "In", values: ["node-b"] }] },
        ]);
        await runAndTearDown(t, c, "late-pod", pvName, nodeOf(c, "node-b"));
      }),
  );

  test(
    "raw block volume: attached, staged and published as a block device, torn down with no loop device left",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        await c.client.create(
          GVR.storageClasses,
          storageClass("blk", {
            allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE_KEY, values: ["zone-a"] }] }],
          }),
        );
        await c.client.create(GVR.persistentVolumeClaims, newClaim("raw", "blk", { block: true }));
        const claim = await boundClaim(c.client, "raw");
        await c.client.create(GVR.pods, podWithClaim("raw-pod", "raw", { block: true }));
        assert.equal(await scheduledNode(c.client, "raw-pod"), "node-a");
        await runAndTearDown(t, c, "raw-pod", claim.spec?.volumeName ?? "", nodeOf(c, "node-a"), {
          block: true,
        });
      }),
  );

  test(
    "controllers restarted mid-provisioning and mid-teardown: the flow completes, nothing is duplicated",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        await c.client.create(GVR.storageClasses, storageClass("rs"));
        await c.client.create(GVR.persistentVolumeClaims, newClaim("rs", "rs"));
        await c.client.create(GVR.pods, podWithClaim("rs-pod", "rs"));
        await until(
          async () =>
            (await c.client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "rs", { namespace: NS }))
              .metadata?.annotations?.[ANNOTATIONS.storageProvisioner.key] === DRIVER,
          "claim handed to the provisioner",
          { timeoutMs: LONG },
        );
        // Down while the provisioner creates the volume: nothing binds or schedules meanwhile.
        await c.stopControllers();
        const uid = (
          await c.client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "rs", { namespace: NS })
        ).metadata?.uid;
        const pvName = `pvc-${uid ?? ""}`;
        await until(
          async () => (await orUndefined(c.client.get(GVR.persistentVolumes, pvName))) !== undefined,
          "PV created",
          { timeoutMs: LONG },
        );
        c.startControllers();
        await boundClaim(c.client, "rs");
        const nodeName = await scheduledNode(c.client, "rs-pod");
        const node = nodeOf(c, nodeName);
        // Down again right after scheduling, while the attach is under way.
        await c.stopControllers();
        c.startControllers();
        const pv = await c.client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
        const handle = pv.spec?.csi?.volumeHandle ?? "";
        const vaName = attachmentName(handle, DRIVER, nodeName);
        await until(
          async () =>
            (await orUndefined(c.client.get<VolumeAttachment>(GVR.volumeAttachments, vaName)))?.status
              ?.attached,
          "attached after the restart",
          { timeoutMs: LONG },
        );
        if (MOUNTS) await until(() => podRunning(c.client, NS, "rs-pod"), "pod Running", { timeoutMs: LONG });
        else t.diagnostic(`stage/publish/Running part skipped: ${NO_MOUNTS}`);
        const attachments = await c.client.list<VolumeAttachment>(GVR.volumeAttachments);
        assert.deepEqual(
          attachments.items.map((va) => va.metadata?.name),
          [vaName],
          "one VolumeAttachment",
        );

        // Down again in the middle of teardown: the node unmounts, detach waits for the restart.
        await c.stopControllers();
        await c.client.delete(GVR.pods, "rs-pod", { namespace: NS });
        await until(async () => (await getPod(c.client, NS, "rs-pod")) === undefined, "pod gone", {
          timeoutMs: LONG,
        });
        await until(async () => (await mountPointsUnder(node.root)).length === 0, "unmounted", {
          timeoutMs: LONG,
        });
        assert.ok(
          (await orUndefined(c.client.get(GVR.volumeAttachments, vaName))) !== undefined,
          "no detach while the controllers are down",
        );
        c.startControllers();
        await until(
          async () => (await orUndefined(c.client.get(GVR.volumeAttachments, vaName))) === undefined,
          "detached after the restart",
          { timeoutMs: LONG },
        );
        await until(
          async () => {
            const status = (await c.client.get<Node>(GVR.nodes, nodeName)).status;
            return (status?.volumesInUse ?? []).length === 0 && (status?.volumesAttached ?? []).length === 0;
          },
          "node volume lists empty",
          { timeoutMs: LONG },
        );
        assert.equal(c.provisioner.created.get("rs"), 1, "CreateVolume once");
        assert.equal(c.attacher.published.get(vaName), 1, "ControllerPublishVolume once");
        const pvs = await c.client.list<PersistentVolume>(GVR.persistentVolumes);
        assert.deepEqual(
          pvs.items.map((p) => p.metadata?.name),
          [pvName],
          "one PV",
        );
        assert.deepEqual(await mountPointsUnder(node.root), []);
        if (MOUNTS) assertOnceEach(node, handle);
      }),
  );

  test(
    "secrets and pod info: NodeStage gets the stage secret, NodePublish the publish secret and the pod-info keys (podInfoOnMount)",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(t, async (c) => {
        for (const [name, value] of [
          ["stage-secret", "st4ge-v4lue"],
          ["publish-secret", "publ1sh-v4lue"],
        ] as const)
          await c.client.create(GVR.secrets, {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name, namespace: NS },
            data: { password: Buffer.from(value).toString("base64") },
          });
        const created = await c.csi.controller.createVolume({
          name: "secret-vol",
          capacityRange: { requiredBytes: "1048576" },
          volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
          accessibilityRequirements: { requisite: [{ segments: { [TOPOLOGY_KEY_NODE]: "node-a" } }] },
        });
        const handle = created.volume?.volumeId ?? "";
        await c.client.create<PersistentVolume>(GVR.persistentVolumes, {
          apiVersion: "v1",
          kind: "PersistentVolume",
          metadata: { name: "pv-secret" },
          spec: {
            capacity: { storage: "1Mi" },
            accessModes: ["ReadWriteOnce"],
            persistentVolumeReclaimPolicy: "Retain",
            storageClassName: "",
            volumeMode: "Filesystem",
            csi: {
              driver: DRIVER,
              volumeHandle: handle,
              volumeAttributes: created.volume?.volumeContext ?? {},
              nodeStageSecretRef: { name: "stage-secret", namespace: NS },
              nodePublishSecretRef: { name: "publish-secret", namespace: NS },
            },
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  { matchExpressions: [{ key: TOPOLOGY_KEY_NODE, operator: "In", values: ["node-a"] }] },
                ],
              },
            },
          },
        });
        await c.client.create(GVR.persistentVolumeClaims, newClaim("secret", ""));
        await boundClaim(c.client, "secret");
        const app = podWithClaim("secret-pod", "secret");
        const createdPod = await c.client.create<Pod>(GVR.pods, {
          ...app,
          spec: { ...app.spec!, serviceAccountName: "app-sa" },
        });
        const node = nodeOf(c, await scheduledNode(c.client, "secret-pod"));
        assert.equal(node.name, "node-a");
        const stage = await until(
          () => node.tap.callsOf("NodeStageVolume").find((call) => call.request.volumeId === handle),
          "NodeStageVolume called",
          { timeoutMs: LONG },
        );
        assert.deepEqual(stage.request.secrets, { password: "st4ge-v4lue" });
        if (!MOUNTS) {
          t.diagnostic(`NodePublishVolume part skipped (staging needs mounts): ${NO_MOUNTS}`);
          return;
        }
        const publish = await until(
          () => node.tap.callsOf("NodePublishVolume").find((call) => call.request.volumeId === handle),
          "NodePublishVolume called",
          { timeoutMs: LONG },
        );
        assert.deepEqual(publish.request.secrets, { password: "publ1sh-v4lue" });
        const context = publish.request.volumeContext as Record<string, string>;
        assert.equal(context[POD_INFO_KEYS.podName], "secret-pod");
        assert.equal(context[POD_INFO_KEYS.podNamespace], NS);
        assert.equal(context[POD_INFO_KEYS.podUID], createdPod.metadata?.uid);
        assert.equal(context[POD_INFO_KEYS.serviceAccountName], "app-sa");
        assert.equal(context[POD_INFO_KEYS.ephemeral], "false");
        await runAndTearDown(t, c, "secret-pod", "pv-secret", node);
      }),
  );

  test(
    "node agent killed with -9 mid-publish and restarted: reconstruction tears down the deleted pod, finishes the other, detaches, mounts nothing twice",
    { timeout: SUITE_TIMEOUT },
    (t) =>
      withCluster(
        t,
        async (c) => {
          const node = nodeOf(c, "node-b");
          await c.client.create(
            GVR.storageClasses,
            storageClass("zone-b", {
              allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE_KEY, values: ["zone-b"] }] }],
            }),
          );
          const volumes: Record<string, { pv: string; handle: string; va: string }> = {};
          for (const name of ["ka", "kb"]) {
            await c.client.create(GVR.persistentVolumeClaims, newClaim(name, "zone-b"));
            const pvName = (await boundClaim(c.client, name)).spec?.volumeName ?? "";
            const handle =
              (await c.client.get<PersistentVolume>(GVR.persistentVolumes, pvName)).spec?.csi?.volumeHandle ??
              "";
            volumes[name] = { pv: pvName, handle, va: attachmentName(handle, DRIVER, node.name) };
          }
          const ka = volumes.ka!;
          const kb = volumes.kb!;
          const attached = (va: string) => async () =>
            (await orUndefined(c.client.get<VolumeAttachment>(GVR.volumeAttachments, va)))?.status?.attached;
          await c.client.create(GVR.pods, podWithClaim("pod-ka", "ka"));
          assert.equal(await scheduledNode(c.client, "pod-ka"), node.name);
          await until(attached(ka.va), "ka attached", { timeoutMs: LONG });
          if (MOUNTS)
            await until(() => podRunning(c.client, NS, "pod-ka"), "pod-ka Running", { timeoutMs: LONG });
          const podKb = await c.client.create<Pod>(GVR.pods, podWithClaim("pod-kb", "kb"));
          assert.equal(await scheduledNode(c.client, "pod-kb"), node.name);
          await until(attached(kb.va), "kb attached", { timeoutMs: LONG });
          if (MOUNTS) {
            // Mid-operation: the node writes vol_data.json just before NodePublishVolume.
            const volData = join(node.paths.podVolumeDir(podKb.metadata?.uid ?? "", kb.pv), "vol_data.json");
            await until(() => readFile(volData).then(() => true), "pod-kb publish started", {
              timeoutMs: LONG,
            });
          }
          await node.stopAgent();

          // While the agent is down pod-ka is deleted: only the restarted agent can finish that.
          await c.client.delete(GVR.pods, "pod-ka", { namespace: NS });
          await node.startAgent();
          await until(
            async () => (await getPod(c.client, NS, "pod-ka")) === undefined,
            "pod-ka deletion finished",
            { timeoutMs: LONG },
          );
          await until(
            async () => (await orUndefined(c.client.get(GVR.volumeAttachments, ka.va))) === undefined,
            "ka detached",
            { timeoutMs: LONG },
          );
          if (MOUNTS) {
            await until(() => podRunning(c.client, NS, "pod-kb"), "pod-kb Running", { timeoutMs: LONG });
            const uid = podKb.metadata?.uid ?? "";
            const expected = [
              node.paths.stagingTarget(DRIVER, kb.handle),
              node.paths.publishTarget(uid, kb.pv),
            ];
            await until(
              async () =>
                JSON.stringify((await mountPointsUnder(node.root)).sort()) ===
                JSON.stringify(expected.sort()),
              "only kb mounted, once each",
              { timeoutMs: LONG },
            );
            const stagedKa = node.tap
              .callsOf("NodeStageVolume")
              .filter((call) => call.request.volumeId === ka.handle);
            assert.equal(stagedKa.length, 1, "ka staged once");
          } else {
            t.diagnostic(`stage/publish/Running part skipped: ${NO_MOUNTS}`);
          }
          assert.ok((await attached(kb.va)()) === true, "kb stays attached");
          await c.client.delete(GVR.pods, "pod-kb", { namespace: NS });
          await until(async () => (await getPod(c.client, NS, "pod-kb")) === undefined, "pod-kb gone", {
            timeoutMs: LONG,
          });
          await until(async () => (await mountPointsUnder(node.root)).length === 0, "nothing mounted", {
            timeoutMs: LONG,
          });
          await until(
            async () => {
              const status = (await c.client.get<Node>(GVR.nodes, node.name)).status;
              const vas = await c.client.list<VolumeAttachment>(GVR.volumeAttachments);
              return (
                (status?.volumesInUse ?? []).length === 0 &&
                (status?.volumesAttached ?? []).length === 0 &&
                vas.items.length === 0
              );
            },
            "node volume lists empty, nothing attached",
            { timeoutMs: LONG },
          );
          assert.equal(c.attacher.published.get(ka.va), 1, "ka published once");
          assert.equal(c.attacher.published.get(kb.va), 1, "kb published once");
        },
        { childAgentOn: "node-b" },
      ),
  );
}
