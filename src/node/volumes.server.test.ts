// The volume manager against the real API server with a scripted CSI node plugin that records
// every request (so secrets, contexts and paths can be checked; it creates and removes target
// dirs like a driver but mounts nothing, so these run unprivileged too). Real mounts with the
// hostpath driver are in mounts.server.test.ts.

import assert from "node:assert/strict";
import { lstat, readFile, readlink, stat } from "node:fs/promises";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import {
  GVR,
  kubeRelease,
  type CSIDriver,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Secret,
} from "../api/index.ts";
import { memoryLogger, type Logger } from "../base/index.ts";
import { GrpcStatus, type NodeServiceCapability_RPC_Type } from "../csi/index.ts";
import type { CoreEvent } from "../kube/index.ts";
import {
  assertNoSecretIn,
  boundClaim,
  csiDriver,
  getPod,
  markAttached,
  persistentVolume,
  pod,
  podRunning,
  runNode,
  runRealRegistrar,
  serveScriptedNode,
  testServer,
  type ScriptedNode,
} from "../../test/harness/node.ts";
import { attachmentName, ephemeralVolumeHandle, KubeletPaths, sha256Hex, uniqueVolumeName } from "./index.ts";
import { until } from "../../test/harness/until.ts";
import { tempDir } from "../../test/harness/cleanup.ts";

const DRIVER = "scripted.csi.k8s.io";
const NODE = "node-a";
const NS = "default";

async function setup(
  t: TestContext,
  options: {
    capabilities: NodeServiceCapability_RPC_Type[];
    driverSpec?: CSIDriver["spec"];
    httpEndpoint?: string;
    syncFrequencyMs?: number;
    /** The kubelet's own retry intervals instead of the harness's fast ones. */
    kubeletRetries?: boolean;
    /** The node's resolved gates (default: the default release's). */
    featureGates?: Record<string, boolean>;
    logger?: Logger;
  },
) {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-node-driver-");
  const endpoint = join(dir, "csi.sock");
  const scripted = await serveScriptedNode(t, {
    endpoint,
    nodeId: "scripted-a",
    capabilities: options.capabilities,
  });
  if (options.driverSpec) await client.create(GVR.csiDrivers, csiDriver(DRIVER, options.driverSpec));
  let metricsUrl: string | undefined;
  const node = await runNode(t, client, {
    nodeName: NODE,
    rootDir: root,
    volumeStatsAggPeriodMs: 100,
    ...(options.syncFrequencyMs !== undefined ? { syncFrequencyMs: options.syncFrequencyMs } : {}),
    ...(options.httpEndpoint ? { httpEndpoint: options.httpEndpoint } : {}),
    ...(options.kubeletRetries ? { retryInitialMs: 500, retryMaxMs: 122_000 } : {}),
    ...(options.featureGates ? { featureGates: options.featureGates } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    onReady: (info) => (metricsUrl = info.metricsUrl),
  });
  await runRealRegistrar(t, client, { rootDir: root, nodeName: NODE, csiAddress: endpoint });
  return {
    api,
    client,
    root,
    paths: new KubeletPaths(root),
    scripted,
    endpoint,
    node,
    metricsUrl: () => metricsUrl,
  };
}

async function secret(
  client: ReturnType<Awaited<ReturnType<typeof testServer>>["client"]>,
  name: string,
  data: Record<string, string>,
) {
  await client.create<Secret>(GVR.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: NS },
    stringData: data,
  });
}

function lastCall(scripted: ScriptedNode, method: string): Record<string, unknown> {
  const calls = scripted.callsOf(method);
  assert.ok(calls.length > 0, `${method} was called`);
  return calls[calls.length - 1]!.request;
}

async function json(path: string): Promise<unknown> {
  return JSON.parse(await readFile(path, "utf8"));
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

async function events(
  client: ReturnType<Awaited<ReturnType<typeof testServer>>["client"]>,
): Promise<CoreEvent[]> {
  return (await client.list<CoreEvent>(GVR.events, { namespace: NS })).items;
}

test("PV pod: waits for attach, stages and publishes with secrets and pod info, Running, then teardown to pod gone", async (t) => {
  const { client, paths, scripted } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    driverSpec: { attachRequired: true, podInfoOnMount: true },
  });
  await secret(client, "stage-secret", { stageKey: "stage-value-S3CR3T" });
  await secret(client, "publish-secret", { publishKey: "publish-value-S3CR3T" });
  const { pv } = await boundClaim(
    client,
    NS,
    "data",
    persistentVolume("pv-1", {
      driver: DRIVER,
      handle: "vol-1",
      csi: {
        fsType: "ext4",
        volumeAttributes: { color: "blue" },
        nodeStageSecretRef: { name: "stage-secret", namespace: NS },
        nodePublishSecretRef: { name: "publish-secret", namespace: NS },
      },
    }),
  );
  await client.patch(GVR.persistentVolumes, "pv-1", { spec: { mountOptions: ["noatime"] } });
  const created = await client.create(
    GVR.pods,
    pod(NS, "app", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "data" } }],
    }),
  );
  const uid = created.metadata?.uid ?? "";
  const unique = uniqueVolumeName(DRIVER, "vol-1");

  // The node reports the volume in use before it is attached, and stages nothing until then.
  await until(
    async () => (await client.get<Node>(GVR.nodes, NODE)).status?.volumesInUse?.includes(unique),
    "volumesInUse",
  );
  assert.equal(
    scripted.callsOf("NodeStageVolume").length,
    0,
    "no NodeStage before the VolumeAttachment is attached",
  );

  await markAttached(client, {
    name: attachmentName("vol-1", DRIVER, NODE),
    driver: DRIVER,
    pvName: pv.metadata?.name ?? "",
    nodeName: NODE,
    metadata: { devicePath: "/dev/fake" },
  });
  const running = await until(() => podRunning(client, NS, "app"), "pod Running");
  const conditions = Object.fromEntries((running.status?.conditions ?? []).map((c) => [c.type, c.status]));
  assert.deepEqual(conditions, {
    PodReadyToStartContainers: "True",
    Initialized: "True",
    Ready: "True",
    ContainersReady: "True",
    PodScheduled: "True",
  });
  assert.ok(running.status?.startTime);
  assert.equal(running.status?.containerStatuses?.[0]?.ready, true);

  const staging = paths.stagingTarget(DRIVER, "vol-1");
  assert.equal(
    staging,
    join(paths.root, "plugins/kubernetes.io/csi", DRIVER, sha256Hex("vol-1"), "globalmount"),
  );
  const stage = lastCall(scripted, "NodeStageVolume");
  assert.deepEqual(stage, {
    volumeId: "vol-1",
    publishContext: { devicePath: "/dev/fake" },
    stagingTargetPath: staging,
    volumeCapability: {
      mount: { fsType: "ext4", mountFlags: ["noatime"], volumeMountGroup: "" },
      accessMode: { mode: "SINGLE_NODE_WRITER" },
      accessType: "mount",
    },
    secrets: { stageKey: "stage-value-S3CR3T" },
    volumeContext: { color: "blue" },
  });
  const target = join(paths.root, "pods", uid, "volumes/kubernetes.io~csi/pv-1/mount");
  const publish = lastCall(scripted, "NodePublishVolume");
  assert.equal(publish.targetPath, target);
  assert.equal(publish.stagingTargetPath, staging);
  assert.equal(publish.readonly, false);
  assert.deepEqual(publish.publishContext, { devicePath: "/dev/fake" });
  assert.deepEqual(publish.secrets, { publishKey: "publish-value-S3CR3T" });
  assert.deepEqual(publish.volumeContext, {
    color: "blue",
    "csi.storage.k8s.io/pod.name": "app",
    "csi.storage.k8s.io/pod.namespace": NS,
    "csi.storage.k8s.io/pod.uid": uid,
    "csi.storage.k8s.io/serviceAccount.name": "default",
    "csi.storage.k8s.io/ephemeral": "false",
  });
  assert.deepEqual(await json(join(paths.stagingDir(DRIVER, "vol-1"), "vol_data.json")), {
    volumeHandle: "vol-1",
    driverName: DRIVER,
  });
  assert.deepEqual(
    await json(join(paths.root, "pods", uid, "volumes/kubernetes.io~csi/pv-1/vol_data.json")),
    {
      specVolID: "pv-1",
      volumeHandle: "vol-1",
      driverName: DRIVER,
      nodeName: NODE,
      attachmentID: attachmentName("vol-1", DRIVER, NODE),
      volumeLifecycleMode: "Persistent",
    },
  );

  // Graceful delete: the node unpublishes, unstages, drops volumesInUse and finishes the delete.
  await client.delete(GVR.pods, "app", { namespace: NS });
  await until(async () => (await getPod(client, NS, "app")) === undefined, "pod gone");
  assert.deepEqual(lastCall(scripted, "NodeUnpublishVolume"), { volumeId: "vol-1", targetPath: target });
  await until(() => scripted.callsOf("NodeUnstageVolume").length > 0, "unstaged");
  assert.deepEqual(lastCall(scripted, "NodeUnstageVolume"), {
    volumeId: "vol-1",
    stagingTargetPath: staging,
  });
  await until(
    async () => ((await client.get<Node>(GVR.nodes, NODE)).status?.volumesInUse ?? []).length === 0,
    "volumesInUse empty",
  );
  await until(async () => !(await exists(paths.podDir(uid))), "pod dir removed");
  await until(async () => !(await exists(paths.stagingDir(DRIVER, "vol-1"))), "staging dir removed");
  for (const event of await events(client)) {
    assert.ok(!event.message?.includes("S3CR3T"), `secret leaked in event: ${event.message}`);
  }
});

test("raw block PV: NodeStage/NodePublish of a block capability at the volumeDevices paths", async (t) => {
  const { client, paths, scripted } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    driverSpec: { attachRequired: false },
  });
  await boundClaim(
    client,
    NS,
    "raw",
    persistentVolume("pv-b", { driver: DRIVER, handle: "blk-1", block: true }),
    { block: true },
  );
  const created = await client.create(
    GVR.pods,
    pod(NS, "blk", {
      nodeName: NODE,
      volumes: [{ name: "dev", persistentVolumeClaim: { claimName: "raw" } }],
    }),
  );
  const uid = created.metadata?.uid ?? "";
  await until(() => podRunning(client, NS, "blk"), "pod Running");
  const stage = lastCall(scripted, "NodeStageVolume");
  assert.equal(
    stage.stagingTargetPath,
    join(paths.root, "plugins/kubernetes.io/csi/volumeDevices/staging/pv-b"),
  );
  assert.deepEqual(stage.volumeCapability, {
    block: {},
    accessMode: { mode: "SINGLE_NODE_WRITER" },
    accessType: "block",
  });
  const publish = lastCall(scripted, "NodePublishVolume");
  const target = join(paths.root, "plugins/kubernetes.io/csi/volumeDevices/publish/pv-b", uid);
  assert.equal(publish.targetPath, target);
  assert.equal(await readlink(join(paths.root, "pods", uid, "volumeDevices/kubernetes.io~csi/pv-b")), target);
  assert.deepEqual(
    await json(join(paths.root, "plugins/kubernetes.io/csi/volumeDevices/pv-b/data/vol_data.json")),
    {
      specVolID: "pv-b",
      volumeHandle: "blk-1",
      driverName: DRIVER,
      nodeName: NODE,
      attachmentID: attachmentName("blk-1", DRIVER, NODE),
      volumeLifecycleMode: "Persistent",
    },
  );
  await client.delete(GVR.pods, "blk", { namespace: NS });
  await until(async () => (await getPod(client, NS, "blk")) === undefined, "pod gone");
  await until(() => scripted.callsOf("NodeUnstageVolume").length > 0, "unstaged");
  await until(
    async () => !(await exists(join(paths.root, "plugins/kubernetes.io/csi/volumeDevices/pv-b"))),
    "block dirs removed",
  );
  assert.equal(await exists(target), false);
});

test("inline ephemeral volume: no stage, FACTS handle, ephemeral context, fsGroup delegated through volume_mount_group", async (t) => {
  const { client, paths, scripted } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME", "VOLUME_MOUNT_GROUP"],
    driverSpec: {
      attachRequired: false,
      podInfoOnMount: true,
      volumeLifecycleModes: ["Ephemeral"],
      fsGroupPolicy: "File",
    },
  });
  const created = await client.create(
    GVR.pods,
    pod(NS, "eph", {
      nodeName: NODE,
      fsGroup: 2000,
      volumes: [{ name: "scratch", csi: { driver: DRIVER, volumeAttributes: { size: "1Mi" } } }],
    }),
  );
  const uid = created.metadata?.uid ?? "";
  await until(() => podRunning(client, NS, "eph"), "pod Running");
  assert.equal(scripted.callsOf("NodeStageVolume").length, 0);
  const publish = lastCall(scripted, "NodePublishVolume");
  const handle = ephemeralVolumeHandle(uid, "scratch");
  assert.equal(handle, `csi-${sha256Hex(uid + "scratch")}`);
  assert.equal(publish.volumeId, handle);
  assert.equal(publish.stagingTargetPath, "");
  assert.equal((publish.volumeContext as Record<string, string>)["csi.storage.k8s.io/ephemeral"], "true");
  assert.equal((publish.volumeContext as Record<string, string>).size, "1Mi");
  assert.equal(
    (publish.volumeCapability as { mount: { volumeMountGroup: string } }).mount.volumeMountGroup,
    "2000",
  );
  const volData = (await json(
    join(paths.root, "pods", uid, "volumes/kubernetes.io~csi/scratch/vol_data.json"),
  )) as Record<string, string>;
  assert.equal(volData.volumeLifecycleMode, "Ephemeral");
  assert.equal(volData.volumeHandle, handle);
  await client.delete(GVR.pods, "eph", { namespace: NS });
  await until(async () => (await getPod(client, NS, "eph")) === undefined, "pod gone");
  assert.equal(lastCall(scripted, "NodeUnpublishVolume").volumeId, handle);
});

test("tokenRequests: pod-bound ServiceAccount tokens per audience in volume_context; requiresRepublish publishes again each sync period", async (t) => {
  const { client, scripted } = await setup(t, {
    capabilities: [],
    syncFrequencyMs: 150,
    driverSpec: {
      attachRequired: false,
      podInfoOnMount: true,
      volumeLifecycleModes: ["Ephemeral"],
      tokenRequests: [{ audience: "vault", expirationSeconds: 3600 }, { audience: "" }],
      requiresRepublish: true,
    },
  });
  await client.create(GVR.serviceAccounts, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "app-sa", namespace: NS },
  });
  const spec = pod(NS, "tok", { nodeName: NODE, volumes: [{ name: "creds", csi: { driver: DRIVER } }] });
  spec.spec!.serviceAccountName = "app-sa";
  const created = await client.create(GVR.pods, spec);
  await until(() => podRunning(client, NS, "tok"), "pod Running");
  const context = lastCall(scripted, "NodePublishVolume").volumeContext as Record<string, string>;
  assert.equal(context["csi.storage.k8s.io/serviceAccount.name"], "app-sa");
  const tokens = JSON.parse(context["csi.storage.k8s.io/serviceAccount.tokens"] ?? "{}") as Record<
    string,
    { token: string; expirationTimestamp: string }
  >;
  assert.deepEqual(Object.keys(tokens).sort(), ["", "vault"]);
  const claims = (token: string) =>
    JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as {
      aud: string[];
      sub: string;
      "kubernetes.io": { pod: { name: string; uid: string } };
    };
  const vault = claims(tokens.vault!.token);
  assert.deepEqual(vault.aud, ["vault"]);
  assert.equal(vault.sub, "system:serviceaccount:default:app-sa");
  assert.deepEqual(vault["kubernetes.io"].pod, { name: "tok", uid: created.metadata?.uid });
  assert.ok(Date.parse(tokens.vault!.expirationTimestamp) > Date.now());
  assert.notDeepEqual(claims(tokens[""]!.token).aud, ["vault"]);
  // Republished while mounted, each time with freshly minted tokens.
  await until(() => scripted.callsOf("NodePublishVolume").length >= 3, "republished twice");
  const republished = lastCall(scripted, "NodePublishVolume").volumeContext as Record<string, string>;
  assert.notEqual(
    republished["csi.storage.k8s.io/serviceAccount.tokens"],
    context["csi.storage.k8s.io/serviceAccount.tokens"],
  );
  await client.delete(GVR.pods, "tok", { namespace: NS });
  await until(async () => (await getPod(client, NS, "tok")) === undefined, "pod gone");
});

for (const gateOn of [true, false]) {
  test(`serviceAccountTokenInSecrets with CSIServiceAccountTokenSecrets=${gateOn}: tokens in ${gateOn ? "NodePublishVolume secrets, not volume_context" : "volume_context (gate off)"}`, async (t) => {
    // 1.35: the gate is beta there, so it may be turned off (1.36 locks it on).
    const gates = kubeRelease("1.35", { CSIServiceAccountTokenSecrets: String(gateOn) }).gates;
    // Everything the node logs, at the highest verbosity: no token may be in it.
    const { logger, lines } = memoryLogger({ verbosity: 10 });
    const { client, scripted } = await setup(t, {
      capabilities: [],
      featureGates: gates,
      logger,
      driverSpec: {
        attachRequired: false,
        volumeLifecycleModes: ["Ephemeral"],
        tokenRequests: [{ audience: "vault" }],
        serviceAccountTokenInSecrets: true,
      },
    });
    await client.create(GVR.secrets, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "publish-secret", namespace: NS },
      data: { password: Buffer.from("hunter2").toString("base64") },
    });
    // No ServiceAccount controller runs here: the pod's account is made by hand.
    await client.create(GVR.serviceAccounts, {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "default", namespace: NS },
    });
    const spec = pod(NS, "tok", {
      nodeName: NODE,
      volumes: [{ name: "creds", csi: { driver: DRIVER, nodePublishSecretRef: { name: "publish-secret" } } }],
    });
    await client.create(GVR.pods, spec);
    await until(() => podRunning(client, NS, "tok"), "pod Running").catch(async (error: unknown) => {
      const events = await client.list<CoreEvent>(GVR.events, { namespace: NS });
      throw new Error(`${String(error)}; events: ${events.items.map((e) => e.message).join(" | ")}`);
    });
    const publish = lastCall(scripted, "NodePublishVolume");
    const secrets = publish.secrets as Record<string, string>;
    const context = publish.volumeContext as Record<string, string>;
    const key = "csi.storage.k8s.io/serviceAccount.tokens";
    assert.equal(secrets.password, "hunter2", "the publish secret's own keys stay");
    const where = gateOn ? secrets : context;
    const other = gateOn ? context : secrets;
    assert.equal(other[key], undefined);
    const tokens = JSON.parse(where[key] ?? "{}") as Record<string, { token: string }>;
    assert.deepEqual(Object.keys(tokens), ["vault"]);
    assert.match(tokens.vault!.token, /^ey/);
    const events = await client.list<CoreEvent>(GVR.events, { namespace: NS });
    assertNoSecretIn(lines.join("\n") + JSON.stringify(events.items), tokens.vault!.token);
  });
}

test("failures: FailedMount event in the kubelet's words, retried with backoff; a driver that is down is retried until back", async (t) => {
  const { client, scripted, endpoint } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    driverSpec: { attachRequired: false },
  });
  await boundClaim(client, NS, "data", persistentVolume("pv-f", { driver: DRIVER, handle: "vol-f" }));
  await boundClaim(client, NS, "data2", persistentVolume("pv-f2", { driver: DRIVER, handle: "vol-f2" }));
  scripted.failWith("NodePublishVolume", GrpcStatus.INTERNAL);
  await client.create(
    GVR.pods,
    pod(NS, "flaky", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "data" } }],
    }),
  );
  const event = await until(
    async () =>
      (await events(client)).find((e) => e.reason === "FailedMount" && e.involvedObject?.name === "flaky"),
    "FailedMount event",
  );
  assert.equal(
    event.message,
    'MountVolume.SetUp failed for volume "pv-f" : rpc error: code = Internal desc = scripted NodePublishVolume failure',
  );
  assert.equal(event.type, "Warning");
  assert.equal(event.source?.component, "kubelet");
  await until(() => scripted.callsOf("NodePublishVolume").length >= 2, "retried");
  scripted.failWith("NodePublishVolume", undefined);
  await until(() => podRunning(client, NS, "flaky"), "pod Running after the failure clears");

  // The driver goes down: calls fail UNAVAILABLE and are retried until it is back.
  await scripted.server.close();
  await client.create(
    GVR.pods,
    pod(NS, "patient", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "data2" } }],
    }),
  );
  const down = await until(
    async () =>
      (await events(client)).find((e) => e.reason === "FailedMount" && e.involvedObject?.name === "patient"),
    "FailedMount while the driver is down",
  );
  assert.match(
    down.message ?? "",
    /MountVolume\.MountDevice failed for volume "pv-f2" : rpc error: code = Unavailable/,
  );
  const back = await serveScriptedNode(t, {
    endpoint,
    nodeId: "scripted-a",
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
  });
  await until(() => podRunning(client, NS, "patient"), "pod Running once the driver is back", {
    timeoutMs: 30_000,
  });
  assert.ok(back.callsOf("NodePublishVolume").length > 0);
});

test("NodeStageVolume or NodePublishVolume failing for good: retried with the kubelet's backoff (500ms doubling), not on every event the node's own writes cause", async (t) => {
  const { client, scripted } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    driverSpec: { attachRequired: false },
    kubeletRetries: true,
  });
  await boundClaim(client, NS, "s", persistentVolume("pv-s", { driver: DRIVER, handle: "vol-s" }));
  await boundClaim(client, NS, "p", persistentVolume("pv-p", { driver: DRIVER, handle: "vol-p" }));
  const windowMs = 4000;
  // log2(4s / 500ms) + 2
  const allowed = 5;
  const countInWindow = async (method: string, handle: string): Promise<number> => {
    const ofVolume = () => scripted.callsOf(method).filter((c) => c.request.volumeId === handle);
    await until(() => ofVolume().length > 0, `the first ${method}`);
    // performance.now() is the clock timers run on; a timer may fire a millisecond early by
    // Date.now(), so the window is waited out on the monotonic clock, in as many steps as it takes.
    const firstAt = performance.now();
    for (let left = windowMs; left > 0; left = windowMs - (performance.now() - firstAt))
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(left)));
    return ofVolume().length;
  };
  scripted.failWith("NodeStageVolume", GrpcStatus.INTERNAL);
  await client.create(
    GVR.pods,
    pod(NS, "stage-fails", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "s" } }],
    }),
  );
  const stages = await countInWindow("NodeStageVolume", "vol-s");
  assert.ok(
    stages <= allowed,
    `${stages} NodeStageVolume calls in ${windowMs} ms; backoff allows ${allowed}`,
  );
  assert.ok(stages >= 2, `still retried: ${stages}`);
  scripted.failWith("NodeStageVolume", undefined);
  scripted.failWith("NodePublishVolume", GrpcStatus.INTERNAL);
  await client.create(
    GVR.pods,
    pod(NS, "publish-fails", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "p" } }],
    }),
  );
  const publishes = await countInWindow("NodePublishVolume", "vol-p");
  assert.ok(
    publishes <= allowed,
    `${publishes} NodePublishVolume calls in ${windowMs} ms; backoff allows ${allowed}`,
  );
  assert.ok(publishes >= 2, `still retried: ${publishes}`);
});

test("a pod whose claim is not bound gets FailedMount and runs once the claim binds", async (t) => {
  const { client } = await setup(t, { capabilities: [], driverSpec: { attachRequired: false } });
  await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "late", namespace: NS },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "",
    },
  });
  await client.create(
    GVR.pods,
    pod(NS, "waiting", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "late" } }],
    }),
  );
  const event = await until(
    async () =>
      (await events(client)).find((e) => e.reason === "FailedMount" && e.involvedObject?.name === "waiting"),
    "FailedMount",
  );
  assert.match(event.message ?? "", /error processing PVC default\/late: PVC is not bound/);
  const pvc = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "late", { namespace: NS });
  await client.create<PersistentVolume>(GVR.persistentVolumes, {
    ...persistentVolume("pv-late", { driver: DRIVER, handle: "vol-late" }),
    spec: {
      ...persistentVolume("pv-late", { driver: DRIVER, handle: "vol-late" }).spec,
      claimRef: { kind: "PersistentVolumeClaim", namespace: NS, name: "late", uid: pvc.metadata?.uid ?? "" },
    },
  });
  await client.patch(
    GVR.persistentVolumeClaims,
    "late",
    { spec: { volumeName: "pv-late" } },
    { namespace: NS },
  );
  await client.patch(
    GVR.persistentVolumeClaims,
    "late",
    { status: { phase: "Bound" } },
    { namespace: NS, subresource: "status" },
  );
  await until(() => podRunning(client, NS, "waiting"), "pod Running");
});

test("expansion pending on the node → NodeExpandVolume, then the claim's resize status is cleared; volume stats metrics", async (t) => {
  const { client, scripted, metricsUrl } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME", "GET_VOLUME_STATS"],
    driverSpec: { attachRequired: false },
    httpEndpoint: "127.0.0.1:0",
  });
  await boundClaim(client, NS, "grow", persistentVolume("pv-g", { driver: DRIVER, handle: "vol-g" }));
  await client.create(
    GVR.pods,
    pod(NS, "grower", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "grow" } }],
    }),
  );
  await until(() => podRunning(client, NS, "grower"), "pod Running");

  const url = metricsUrl();
  assert.ok(url, "metrics endpoint started");
  const text = await until(async () => {
    const body = await (await fetch(url, { signal: AbortSignal.timeout(5000) })).text();
    return body.includes(
      'kubelet_volume_stats_capacity_bytes{namespace="default",persistentvolumeclaim="grow"} 1048576',
    )
      ? body
      : undefined;
  }, "volume stats metrics");
  assert.match(
    text,
    /kubelet_volume_stats_available_bytes\{namespace="default",persistentvolumeclaim="grow"\} 1000000/,
  );
  assert.match(
    text,
    /kubelet_volume_stats_used_bytes\{namespace="default",persistentvolumeclaim="grow"\} 48576/,
  );
  assert.match(text, /kubelet_volume_stats_inodes\{namespace="default",persistentvolumeclaim="grow"\} 100/);
  assert.match(
    text,
    /kubelet_volume_stats_inodes_free\{namespace="default",persistentvolumeclaim="grow"\} 90/,
  );
  assert.match(
    text,
    /kubelet_volume_stats_inodes_used\{namespace="default",persistentvolumeclaim="grow"\} 10/,
  );

  // Play the resizer: the PV grew, the claim says the node must finish.
  await client.patch(GVR.persistentVolumes, "pv-g", { spec: { capacity: { storage: "2Mi" } } });
  await client.patch(
    GVR.persistentVolumeClaims,
    "grow",
    {
      status: {
        allocatedResourceStatuses: { storage: "NodeResizePending" },
        conditions: [{ type: "FileSystemResizePending", status: "True" }],
      },
    },
    { namespace: NS, subresource: "status" },
  );
  const expand = await until(() => scripted.callsOf("NodeExpandVolume")[0]?.request, "NodeExpandVolume");
  assert.deepEqual(expand.capacityRange, { requiredBytes: "2097152", limitBytes: "0" });
  assert.match(String(expand.volumePath), /volumes\/kubernetes\.io~csi\/pv-g\/mount$/);
  const claimAfter = await until(async () => {
    const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "grow", {
      namespace: NS,
    });
    return current.status?.capacity?.storage === "2Mi" ? current : undefined;
  }, "resize cleared");
  assert.equal(claimAfter.status?.allocatedResourceStatuses?.storage, undefined);
  assert.equal(
    (claimAfter.status?.conditions ?? []).some((c) => c.type === "FileSystemResizePending"),
    false,
  );
  assert.equal(scripted.callsOf("NodeExpandVolume").length, 1, "expanded once");
  assert.ok((await stat(String(expand.volumePath))).isDirectory());
});

test("NodeExpandVolume failing: NodeResizeError and, for an infeasible size, NodeResizeInfeasible; retried once fixed", async (t) => {
  const { client, scripted } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"],
    driverSpec: { attachRequired: false },
  });
  await boundClaim(client, NS, "nogrow", persistentVolume("pv-n", { driver: DRIVER, handle: "vol-n" }));
  await client.create(
    GVR.pods,
    pod(NS, "nogrower", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "nogrow" } }],
    }),
  );
  await until(() => podRunning(client, NS, "nogrower"), "pod Running");
  const claimStatus = async () =>
    (await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "nogrow", { namespace: NS })).status;
  const pending = async () =>
    client.patch(
      GVR.persistentVolumeClaims,
      "nogrow",
      {
        status: {
          allocatedResourceStatuses: { storage: "NodeResizePending" },
          conditions: [{ type: "FileSystemResizePending", status: "True" }],
        },
      },
      { namespace: NS, subresource: "status" },
    );
  // A transient failure: the error condition, the status stays in progress, and it is retried.
  scripted.failWith("NodeExpandVolume", GrpcStatus.UNAVAILABLE);
  await client.patch(GVR.persistentVolumes, "pv-n", { spec: { capacity: { storage: "2Mi" } } });
  await pending();
  const transient = await until(async () => {
    const status = await claimStatus();
    return status?.conditions?.some((c) => c.type === "NodeResizeError") ? status : undefined;
  }, "NodeResizeError");
  assert.equal(transient.allocatedResourceStatuses?.storage, "NodeResizeInProgress");
  assert.match(
    transient.conditions?.find((c) => c.type === "NodeResizeError")?.message ?? "",
    /code = Unavailable/,
  );
  // An infeasible size: the node stops and waits for the resizer.
  scripted.failWith("NodeExpandVolume", GrpcStatus.OUT_OF_RANGE);
  const infeasible = await until(async () => {
    const status = await claimStatus();
    return status?.allocatedResourceStatuses?.storage === "NodeResizeInfeasible" ? status : undefined;
  }, "NodeResizeInfeasible");
  assert.match(infeasible.conditions?.find((c) => c.type === "NodeResizeError")?.message ?? "", /OutOfRange/);
  // The resizer resets the claim (NodeResizePending again): the next try succeeds.
  scripted.failWith("NodeExpandVolume", undefined);
  await pending();
  const done = await until(async () => {
    const status = await claimStatus();
    return status?.capacity?.storage === "2Mi" ? status : undefined;
  }, "capacity 2Mi");
  assert.equal(done.allocatedResourceStatuses?.storage, undefined);
  assert.equal((done.conditions ?? []).length, 0, "NodeResizeError cleared with the resize");
});

test("a finished pod (Succeeded) has its volumes torn down but stays in the API", async (t) => {
  const { client, scripted, paths } = await setup(t, {
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    driverSpec: { attachRequired: false },
  });
  await boundClaim(client, NS, "job", persistentVolume("pv-j", { driver: DRIVER, handle: "vol-j" }));
  const created = await client.create(
    GVR.pods,
    pod(NS, "job", {
      nodeName: NODE,
      volumes: [{ name: "vol", persistentVolumeClaim: { claimName: "job" } }],
    }),
  );
  const uid = created.metadata?.uid ?? "";
  await until(() => podRunning(client, NS, "job"), "pod Running");
  await client.patch(
    GVR.pods,
    "job",
    { status: { phase: "Succeeded" } },
    { namespace: NS, subresource: "status" },
  );
  await until(() => scripted.callsOf("NodeUnstageVolume").length > 0, "unstaged");
  assert.equal(lastCall(scripted, "NodeUnpublishVolume").volumeId, "vol-j");
  // The kubelet keeps a known pod's dir until the pod is deleted; its volume dir goes.
  await until(async () => !(await exists(paths.podVolumeDir(uid, "pv-j"))), "pod volume dir removed");
  const still = await getPod(client, NS, "job");
  assert.equal(still?.status?.phase, "Succeeded", "the node does not delete a finished pod");
});

for (const gate of [true, false])
  test(`volume health (CSIVolumeHealth=${gate}): an abnormal volume_condition → ${gate ? "VolumeConditionAbnormal on the pod and kubelet_volume_stats_health_status_abnormal 1, back to 0 when healthy" : "no event and no health metric, as the kubelet with the gate off"}`, async (t) => {
    const { client, scripted, metricsUrl } = await setup(t, {
      capabilities: ["STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS", "VOLUME_CONDITION"],
      driverSpec: { attachRequired: false },
      httpEndpoint: "127.0.0.1:0",
      featureGates: { CSIVolumeHealth: gate },
    });
    await boundClaim(client, NS, "sick", persistentVolume("pv-s", { driver: DRIVER, handle: "vol-s" }));
    await client.create(
      GVR.pods,
      pod(NS, "patient", {
        nodeName: NODE,
        volumes: [{ name: "store", persistentVolumeClaim: { claimName: "sick" } }],
      }),
    );
    await until(() => podRunning(client, NS, "patient"), "pod Running");
    const url = metricsUrl()!;
    const metrics = async (): Promise<string> =>
      (await fetch(url, { signal: AbortSignal.timeout(5000) })).text();
    const abnormal = (value: 0 | 1) =>
      `kubelet_volume_stats_health_status_abnormal{namespace="default",persistentvolumeclaim="sick"} ${value}`;
    // Stats are collected (capacity shows), healthy while the driver says nothing is wrong.
    await until(
      async () =>
        (await metrics()).includes(
          'kubelet_volume_stats_capacity_bytes{namespace="default",persistentvolumeclaim="sick"}',
        ),
      "stats",
    );
    scripted.volumeCondition = { abnormal: false, message: "" };
    if (gate) await until(async () => (await metrics()).includes(abnormal(0)), "health 0");

    scripted.volumeCondition = { abnormal: true, message: "The source path of the volume doesn't exist" };
    const calls = scripted.callsOf("NodeGetVolumeStats").length;
    if (gate) {
      const event = await until(
        async () => (await events(client)).find((e) => e.reason === "VolumeConditionAbnormal"),
        "VolumeConditionAbnormal on the pod",
      );
      assert.equal(event.type, "Warning");
      assert.equal(event.involvedObject.kind, "Pod");
      assert.equal(event.involvedObject.name, "patient");
      assert.equal(event.message, "Volume store: The source path of the volume doesn't exist");
      assert.equal(event.source.component, "kubelet");
      await until(async () => (await metrics()).includes(abnormal(1)), "health 1");
      scripted.volumeCondition = { abnormal: false, message: "" };
      await until(async () => (await metrics()).includes(abnormal(0)), "health back to 0");
    } else {
      // Several rounds with the abnormal answer, and nothing shows.
      await until(
        () => scripted.callsOf("NodeGetVolumeStats").length >= calls + 3,
        "three more stats rounds",
      );
      assert.equal((await events(client)).filter((e) => e.reason === "VolumeConditionAbnormal").length, 0);
      assert.ok(!(await metrics()).includes("kubelet_volume_stats_health_status_abnormal{"));
    }
  });
