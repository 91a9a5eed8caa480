// The health monitor as `csikit up` runs it: the real API server with the RBAC of deploy/rbac/,
// the monitor under its own ServiceAccount (csi-external-health-monitor-controller), started
// from real command-line flags with short intervals, against `csikit hostpath` (ListVolumes
// mode) and a scripted GET_VOLUME-only driver (ControllerGetVolume mode). Deleting a volume's
// backing data makes VolumeConditionAbnormal appear on its claim; restoring it stops them. The
// node watcher reports the claims of pods on a deleted node, and on a NotReady node that
// recovers.

import assert from "node:assert/strict";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import {
  GVR,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../api/index.ts";
import { Flags, LOGGING_FLAGS, memoryLogger, parseFlags } from "../../base/index.ts";
import { CsiClient, serveCsi } from "../../csi/index.ts";
import type { CoreEvent, KubeClient } from "../../kube/index.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { startHostpath } from "../../../test/harness/provisioner.ts";
import { startRbacCluster, type RbacCluster } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";
import { HEALTH_MONITOR_FLAGS, healthMonitorOptionsFromFlags, startHealthMonitor } from "./index.ts";
import type { HealthMonitorOptions } from "./options.ts";

const SERVICE_ACCOUNT = "csi-external-health-monitor-controller";
const HOSTPATH = "hostpath.csi.k8s.io";
const MISSING = "The source path of the volume doesn't exist";

async function runMonitor(
  t: TestContext,
  cluster: RbacCluster,
  socket: string,
  argv: readonly string[],
  extra: Partial<HealthMonitorOptions> = {},
): Promise<{ done: Promise<void>; logs: string[] }> {
  const kubeconfig = await cluster.serviceAccountKubeconfig("default", SERVICE_ACCOUNT);
  const flags = new Flags(
    parseFlags({ ...LOGGING_FLAGS, ...HEALTH_MONITOR_FLAGS }, [
      `--csi-address=${socket}`,
      `--kubeconfig=${kubeconfig}`,
      "--timeout=5s",
      ...argv,
    ]),
  );
  const { logger, lines } = memoryLogger({ verbosity: 5 });
  const controller = new AbortController();
  const done = startHealthMonitor(
    { ...healthMonitorOptionsFromFlags(flags), ...extra, logger },
    controller.signal,
  );
  done.catch(() => undefined);
  defer(t, async () => {
    controller.abort();
    await done.catch(() => undefined);
  });
  return { done, logs: lines };
}

/** A claim and its PV as the PV controller leaves them (both Bound). */
async function boundClaim(admin: KubeClient, name: string, driver: string, handle: string): Promise<void> {
  const claim = await admin.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: "default" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      volumeName: `pv-${name}`,
    },
  });
  const pv = await admin.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: `pv-${name}` },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      claimRef: {
        kind: "PersistentVolumeClaim",
        apiVersion: "v1",
        namespace: "default",
        name,
        uid: claim.metadata.uid!,
      },
      csi: { driver, volumeHandle: handle },
    },
  });
  await admin.updateStatus(GVR.persistentVolumes, { ...pv, status: { phase: "Bound" } });
  await admin.updateStatus(GVR.persistentVolumeClaims, { ...claim, status: { phase: "Bound" } });
}

async function claimEvents(admin: KubeClient, claim: string, reason: string): Promise<CoreEvent[]> {
  const list = await admin.list<CoreEvent>(GVR.events, { namespace: "default" });
  return list.items.filter(
    (e) =>
      e.involvedObject.kind === "PersistentVolumeClaim" &&
      e.involvedObject.name === claim &&
      e.reason === reason,
  );
}

const total = (events: CoreEvent[]): number => events.reduce((sum, e) => sum + (e.count ?? 1), 0);

test("ListVolumes mode (hostpath): backing data deleted → VolumeConditionAbnormal on the claim, under the monitor's own RBAC; restored → no more", async (t) => {
  const cluster = await startRbacCluster(t);
  const hostpath = await startHostpath(t, cluster.dir);
  const csi = CsiClient.connect(hostpath.path);
  defer(t, () => csi.close());
  const volumeId = (
    await csi.controller.createVolume({
      name: "sick",
      volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
    })
  ).volume!.volumeId;
  await boundClaim(cluster.admin, "data", HOSTPATH, volumeId);
  await boundClaim(cluster.admin, "fine", HOSTPATH, "vol-00000000000000000000000000000000");
  await runMonitor(t, cluster, hostpath.path, ["--list-volumes-interval=100ms"]);

  const data = join(cluster.dir, "hostpath-state", "volumes", volumeId);
  await rm(data, { recursive: true });
  const [event] = await until(async () => {
    const found = await claimEvents(cluster.admin, "data", "VolumeConditionAbnormal");
    return found.length > 0 && found;
  }, "VolumeConditionAbnormal on claim data");
  assert.equal(event!.type, "Warning");
  assert.equal(event!.message, MISSING);
  assert.equal(event!.source.component, `csi-pv-monitor-controller-${HOSTPATH}`);
  // Written by the monitor's own identity, as its Role allows.
  assert.ok(
    cluster.audit.some(
      (a) =>
        a.user.username === `system:serviceaccount:default:${SERVICE_ACCOUNT}` &&
        a.objectRef?.resource === "events" &&
        a.responseStatus.code < 300,
    ),
    "an events write by the monitor's ServiceAccount",
  );
  // Each round reports again (the recorder counts them).
  await until(
    async () => total(await claimEvents(cluster.admin, "data", "VolumeConditionAbnormal")) >= 3,
    "repeated",
  );

  await mkdir(data);
  // Rounds that listed before the restore may still land: wait for the count to hold still for
  // a while (bounded), then it must not move again over many more rounds.
  let last = -1;
  const settled = await until(async () => {
    const now = total(await claimEvents(cluster.admin, "data", "VolumeConditionAbnormal"));
    const stable = now === last;
    last = now;
    await new Promise((resolve) => setTimeout(resolve, 500));
    return stable && now;
  }, "the abnormal count settles after the restore");
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.equal(total(await claimEvents(cluster.admin, "data", "VolumeConditionAbnormal")), settled);
  // A volume the driver does not know is not reported (ListVolumes does not list it).
  assert.equal((await claimEvents(cluster.admin, "fine", "VolumeConditionAbnormal")).length, 0);
});

test("ControllerGetVolume mode (GET_VOLUME without LIST_VOLUMES): the driver's message on the claim; other drivers' volumes untouched", async (t) => {
  const cluster = await startRbacCluster(t);
  const sick = new Set<string>(["vol-sick"]);
  const asked: string[] = [];
  const server = await serveCsi({
    endpoint: join(cluster.dir, "get-volume.sock"),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: "getvolume.csi.csikit.io", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }] }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: (["GET_VOLUME", "VOLUME_CONDITION"] as const).map((type) => ({ rpc: { type } })),
      }),
      controllerGetVolume: async (request) => {
        asked.push(request.volumeId);
        const abnormal = sick.has(request.volumeId);
        return {
          volume: { volumeId: request.volumeId, capacityBytes: "1048576" },
          status: {
            publishedNodeIds: [],
            volumeCondition: { abnormal, message: abnormal ? "disk on fire" : "" },
          },
        };
      },
    },
  });
  defer(t, () => server.close());
  await boundClaim(cluster.admin, "hot", "getvolume.csi.csikit.io", "vol-sick");
  await boundClaim(cluster.admin, "cool", "getvolume.csi.csikit.io", "vol-cool");
  await boundClaim(cluster.admin, "foreign", "other.csi.csikit.io", "vol-sick");
  await runMonitor(t, cluster, server.path, [
    "--monitor-interval=50ms",
    "--volume-list-add-interval=200ms",
    "--worker-threads=2",
  ]);
  const [event] = await until(async () => {
    const found = await claimEvents(cluster.admin, "hot", "VolumeConditionAbnormal");
    return found.length > 0 && found;
  }, "VolumeConditionAbnormal on claim hot");
  assert.equal(event!.message, "disk on fire");
  await until(() => asked.includes("vol-cool"), "vol-cool checked too");
  assert.equal((await claimEvents(cluster.admin, "cool", "VolumeConditionAbnormal")).length, 0);
  assert.equal((await claimEvents(cluster.admin, "foreign", "VolumeConditionAbnormal")).length, 0);
});

test("a driver without VOLUME_CONDITION: start-up fails with upstream's reason", async (t) => {
  const cluster = await startRbacCluster(t);
  const server = await serveCsi({
    endpoint: join(cluster.dir, "plain.sock"),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: "plain.csi.csikit.io", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }] }),
    },
    controller: {
      controllerGetCapabilities: async () => ({ capabilities: [{ rpc: { type: "LIST_VOLUMES" } }] }),
    },
  });
  defer(t, () => server.close());
  const { done } = await runMonitor(t, cluster, server.path, []);
  await assert.rejects(
    done,
    /does not support Controller ListVolumes and GetVolume service or does not implement VolumeCondition/,
  );
});

async function createNode(admin: KubeClient, name: string, ready: boolean): Promise<Node> {
  const node = await admin.create<Node>(GVR.nodes, { apiVersion: "v1", kind: "Node", metadata: { name } });
  return setReady(admin, node, ready);
}

async function setReady(admin: KubeClient, node: Node, ready: boolean): Promise<Node> {
  const current = await admin.get<Node>(GVR.nodes, node.metadata.name!);
  return admin.updateStatus(GVR.nodes, {
    ...current,
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False", reason: "test" }] },
  });
}

async function podOn(admin: KubeClient, name: string, node: string, claim: string): Promise<void> {
  await admin.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName: node,
      containers: [{ name: "c", image: "busybox" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: claim } }],
    },
  });
}

test("node watcher: a deleted node's pods' claims get NodeFailed; a NotReady node past the timeout too, and NodeRecovered once Ready", async (t) => {
  const cluster = await startRbacCluster(t);
  const hostpath = await startHostpath(t, cluster.dir);
  await createNode(cluster.admin, "node-a", true);
  const nodeB = await createNode(cluster.admin, "node-b", true);
  await boundClaim(cluster.admin, "on-a", HOSTPATH, "vol-a");
  await boundClaim(cluster.admin, "on-b", HOSTPATH, "vol-b");
  await boundClaim(cluster.admin, "elsewhere", HOSTPATH, "vol-c");
  await podOn(cluster.admin, "app-a1", "node-a", "on-a");
  await podOn(cluster.admin, "app-a2", "node-a", "on-a");
  await podOn(cluster.admin, "app-b", "node-b", "on-b");
  await podOn(cluster.admin, "app-c", "node-c", "elsewhere");
  const monitor = await runMonitor(
    t,
    cluster,
    hostpath.path,
    ["--enable-node-watcher", "--node-list-add-interval=100ms", "--list-volumes-interval=1h"],
    { nodeNotReadyTimeoutMs: 300 },
  );
  // The node must be in the monitor's cache before it goes, or no deletion is seen.
  await until(
    () => monitor.logs.some((l) => l.includes("Starting CSI External PV Health Monitor")),
    "monitor synced",
  );

  await cluster.admin.delete(GVR.nodes, "node-a");
  const [failed] = await until(async () => {
    const found = await claimEvents(cluster.admin, "on-a", "NodeFailed");
    return found.length > 0 && found;
  }, "NodeFailed on claim on-a");
  assert.equal(failed!.type, "Warning");
  assert.match(
    failed!.message,
    /^Pods: \[ (app-a1 app-a2|app-a2 app-a1) \] consuming PVC: on-a in namespace: default are now on a failed node: node-a$/,
  );

  await setReady(cluster.admin, nodeB, false);
  const [failedB] = await until(async () => {
    const found = await claimEvents(cluster.admin, "on-b", "NodeFailed");
    return found.length > 0 && found;
  }, "NodeFailed on claim on-b after the NotReady timeout");
  assert.equal(
    failedB!.message,
    "Pods: [ app-b ] consuming PVC: on-b in namespace: default are now on a failed node: node-b",
  );
  await setReady(cluster.admin, nodeB, true);
  const [recovered] = await until(async () => {
    const found = await claimEvents(cluster.admin, "on-b", "NodeRecovered");
    return found.length > 0 && found;
  }, "NodeRecovered on claim on-b");
  assert.equal(recovered!.message, "Node: node-b recovered");
  assert.equal((await claimEvents(cluster.admin, "elsewhere", "NodeFailed")).length, 0);
});

test("flags: upstream v0.18's defaults; --worker-threads=0 refused", () => {
  const parse = (argv: string[]) =>
    healthMonitorOptionsFromFlags(new Flags(parseFlags({ ...LOGGING_FLAGS, ...HEALTH_MONITOR_FLAGS }, argv)));
  const defaults = parse([]);
  assert.equal(defaults.csiAddress, "/run/csi/socket");
  assert.equal(defaults.timeoutMs, 15_000);
  assert.equal(defaults.monitorIntervalMs, 60_000);
  assert.equal(defaults.listVolumesIntervalMs, 300_000);
  assert.equal(defaults.volumeListAddIntervalMs, 300_000);
  assert.equal(defaults.nodeListAddIntervalMs, 300_000);
  assert.equal(defaults.resyncPeriodMs, 600_000);
  assert.equal(defaults.workerThreads, 10);
  assert.equal(defaults.enableNodeWatcher, false);
  // Every flag of the upstream twin's deployment and --help is accepted.
  parse([
    "--leader-election",
    "--leader-election-namespace=kube-system",
    "--leader-election-lease-duration=20s",
    "--leader-election-renew-deadline=15s",
    "--leader-election-retry-period=5s",
    "--leader-election-labels=a:b",
    "--kube-api-qps=20",
    "--kube-api-burst=40",
    "--http-endpoint=:8080",
    "--metrics-path=/m",
    "--automaxprocs",
    "--enable-node-watcher=true",
    "--logging-format=text",
    "-v=5",
  ]);
  assert.throws(() => parse(["--worker-threads=0"]), /worker-threads must be greater than zero/);
});
