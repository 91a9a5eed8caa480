// Test fixture of the virtual node (test/harness, so it may import the API
// server): a real API server, a node agent started in-process on a temp root dir, the real
// registrar (and, for what it cannot do on demand — refusals, other plugin types — a
// registration socket served the way an upstream csi-node-driver-registrar serves it), a
// scripted CSI node server that records what it is asked, object builders, and bounded waits.

import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { TestContext } from "node:test";
import type {
  CSIDriver,
  CSINode,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  VolumeAttachment,
} from "../../src/api/index.ts";
import { GVR } from "../../src/api/index.ts";
import { errorMessage, silentLogger } from "../../src/base/index.ts";
import {
  CsiError,
  GrpcStatus,
  serveCsi,
  type CsiServer,
  type NodeService,
  type NodeServiceCapability_RPC_Type,
  type RegistrationStatus,
} from "../../src/csi/index.ts";
import { isNotFound, type KubeClient } from "../../src/kube/index.ts";
import { nodeClient, startTestServer, type TestServer } from "./kube-server.ts";
import { startRegistrar } from "../../src/sidecars/registrar/index.ts";
import { startNode, type NodeOptions } from "../../src/node/index.ts";
import { until } from "./until.ts";
import { defer } from "./cleanup.ts";

/** The node names the node tests use: each runs under its own identity (nodeClient). */
const TEST_NODES = ["node-a", "node-b", "node-g", "node-m", "node-r"];

/** An API server confining nodes as `csikit up` runs it (Node,RBAC, NodeRestriction). */
export async function testServer(t: TestContext): Promise<TestServer> {
  const server = await startTestServer({ nodes: TEST_NODES });
  defer(t, () => server.stop());
  return server;
}

export interface RunningNode {
  stop(): Promise<void>;
  done: Promise<void>;
}

/**
 * startNode in-process, as system:node:<nodeName> when `client` is of a testServer (else as
 * `client`); stopped (and awaited) when the test ends.
 */
export async function runNode(
  t: TestContext,
  client: KubeClient,
  options: Omit<NodeOptions, "client">,
): Promise<RunningNode> {
  const controller = new AbortController();
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const done = startNode(
    {
      leaseRenewIntervalMs: 200,
      pluginRescanIntervalMs: 500,
      retryInitialMs: 50,
      retryMaxMs: 1000,
      logger: silentLogger,
      ...options,
      client: nodeClient(client, options.nodeName),
      onReady: (info) => {
        options.onReady?.(info);
        ready();
      },
    },
    controller.signal,
  );
  const stop = async () => {
    controller.abort();
    await done;
  };
  defer(t, stop);
  await Promise.race([isReady, done]);
  return { stop, done };
}

/**
 * The real registrar (`csikit registrar`, in-process) for the driver at `csiAddress`, as the
 * DaemonSet runs it beside each node's driver; resolves once the node lists the driver in its
 * CSINode. Stopped (socket removed) when the test ends; a registration the node refuses fails
 * the wait with the registrar's error.
 */
export async function runRealRegistrar(
  t: TestContext,
  client: KubeClient,
  options: { rootDir: string; nodeName: string; csiAddress: string },
): Promise<void> {
  const controller = new AbortController();
  let driverName = "";
  const done = startRegistrar(
    {
      csiAddress: options.csiAddress,
      kubeletRegistrationPath: options.csiAddress,
      pluginRegistrationPath: join(options.rootDir, "plugins_registry"),
      logger: silentLogger,
      onServing: (info) => (driverName = info.driverName),
    },
    controller.signal,
  );
  let failure: Error | undefined;
  done.catch((error: unknown) => (failure = error instanceof Error ? error : new Error(String(error))));
  defer(t, async () => {
    controller.abort();
    await done.catch(() => undefined);
  });
  await until(async () => {
    if (failure !== undefined) throw failure;
    if (driverName === "") return false;
    const csiNode = await client.get<CSINode>(GVR.csiNodes, options.nodeName).catch(() => undefined);
    return csiNode?.spec.drivers.some((d) => d.name === driverName);
  }, "driver registered in CSINode");
}

/** A registration socket answering like csi-node-driver-registrar v2 (GetInfo + status record). */
export async function serveRegistration(
  t: TestContext,
  options: {
    rootDir: string;
    driverName: string;
    endpoint: string;
    type?: string;
    versions?: string[];
    /** Answer NotifyRegistrationStatus with UNAVAILABLE (a registrar gone before the status came). */
    notifyFails?: boolean;
  },
): Promise<{ server: CsiServer; statuses: RegistrationStatus[] }> {
  const statuses: RegistrationStatus[] = [];
  await mkdir(join(options.rootDir, "plugins_registry"), { recursive: true });
  const server = await serveCsi({
    endpoint: join(options.rootDir, "plugins_registry", `${options.driverName}-reg.sock`),
    registration: {
      getInfo: () =>
        Promise.resolve({
          type: options.type ?? "CSIPlugin",
          name: options.driverName,
          endpoint: options.endpoint,
          supportedVersions: options.versions ?? ["1.0.0"],
        }),
      notifyRegistrationStatus: (request) => {
        statuses.push(request);
        if (options.notifyFails)
          return Promise.reject(new CsiError(GrpcStatus.UNAVAILABLE, "registrar gone"));
        return Promise.resolve({});
      },
    },
    shutdownGraceMs: 1000,
  });
  defer(t, () => server.close());
  return { server, statuses };
}

/** One recorded call of the scripted node server. */
export interface RecordedCall {
  method: string;
  request: Record<string, unknown>;
}

export interface ScriptedNode {
  server: CsiServer;
  calls: RecordedCall[];
  /** Makes the next calls of `method` fail with `code` (until cleared with undefined). */
  failWith(method: string, code: number | undefined): void;
  callsOf(method: string): RecordedCall[];
  /** volume_condition NodeGetVolumeStats answers with (none when undefined). */
  volumeCondition: { abnormal: boolean; message: string } | undefined;
}

/**
 * A CSI node plugin that records every request and acts like a well-behaved driver on the
 * file system without mounting: publish creates the target dir (or file for block), unpublish
 * removes it. Capabilities are given per test.
 */
export async function serveScriptedNode(
  t: TestContext,
  options: {
    endpoint: string;
    nodeId: string;
    capabilities: NodeServiceCapability_RPC_Type[];
    topology?: Record<string, string>;
    /** GetPluginInfo name; default scripted.csi.k8s.io. */
    name?: string;
    /** max_volumes_per_node NodeGetInfo answers, asked at each call; default 7. */
    maxVolumesPerNode?: () => number;
  },
): Promise<ScriptedNode> {
  const calls: RecordedCall[] = [];
  const failures = new Map<string, number>();
  const record = (method: string, request: object): void => {
    calls.push({ method, request: structuredClone(request) as Record<string, unknown> });
    const code = failures.get(method);
    if (code !== undefined) throw new CsiError(code, `scripted ${method} failure`);
  };
  const { rm: remove, mkdir: makeDir, writeFile } = await import("node:fs/promises");
  let volumeCondition: ScriptedNode["volumeCondition"];
  const node: Partial<NodeService> = {
    nodeGetInfo: (request) => {
      record("NodeGetInfo", request);
      return Promise.resolve({
        nodeId: options.nodeId,
        maxVolumesPerNode: String(options.maxVolumesPerNode?.() ?? 7),
        ...(options.topology ? { accessibleTopology: { segments: options.topology } } : {}),
      });
    },
    nodeGetCapabilities: () =>
      Promise.resolve({ capabilities: options.capabilities.map((type) => ({ rpc: { type } })) }),
    nodeStageVolume: (request) => {
      record("NodeStageVolume", request);
      return Promise.resolve({});
    },
    nodeUnstageVolume: (request) => {
      record("NodeUnstageVolume", request);
      return Promise.resolve({});
    },
    nodePublishVolume: async (request) => {
      record("NodePublishVolume", request);
      if (request.volumeCapability?.block) await writeFile(request.targetPath, "");
      else await makeDir(request.targetPath, { recursive: true });
      return {};
    },
    nodeUnpublishVolume: async (request) => {
      record("NodeUnpublishVolume", request);
      await remove(request.targetPath, { recursive: true, force: true });
      return {};
    },
    nodeExpandVolume: (request) => {
      record("NodeExpandVolume", request);
      return Promise.resolve({ capacityBytes: request.capacityRange?.requiredBytes ?? "0" });
    },
    nodeGetVolumeStats: (request) => {
      record("NodeGetVolumeStats", request);
      return Promise.resolve({
        usage: [
          { unit: "BYTES", total: 1048576, available: 1000000, used: 48576 },
          { unit: "INODES", total: 100, available: 90, used: 10 },
        ],
        ...(volumeCondition ? { volumeCondition } : {}),
      });
    },
  };
  const server = await serveCsi({
    endpoint: options.endpoint,
    identity: {
      getPluginInfo: () =>
        Promise.resolve({ name: options.name ?? "scripted.csi.k8s.io", vendorVersion: "1" }),
      probe: () => Promise.resolve({ ready: { value: true } }),
    },
    node,
    shutdownGraceMs: 1000,
  });
  defer(t, () => server.close());
  return {
    server,
    calls,
    failWith(method, code) {
      if (code === undefined) failures.delete(method);
      else failures.set(method, code);
    },
    callsOf: (method) => calls.filter((c) => c.method === method),
    get volumeCondition() {
      return volumeCondition;
    },
    set volumeCondition(value) {
      volumeCondition = value;
    },
  };
}

export const UNAVAILABLE = GrpcStatus.UNAVAILABLE;

// ---- object builders -------------------------------------------------------------------

export function csiDriver(name: string, spec: CSIDriver["spec"]): CSIDriver {
  return { apiVersion: "storage.k8s.io/v1", kind: "CSIDriver", metadata: { name }, spec };
}

export function persistentVolume(
  name: string,
  options: {
    driver: string;
    handle: string;
    size?: string;
    block?: boolean;
    csi?: Partial<NonNullable<NonNullable<PersistentVolume["spec"]>["csi"]>>;
    accessModes?: NonNullable<PersistentVolume["spec"]>["accessModes"];
  },
): PersistentVolume {
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name },
    spec: {
      capacity: { storage: options.size ?? "1Mi" },
      accessModes: options.accessModes ?? ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      volumeMode: options.block ? "Block" : "Filesystem",
      csi: { driver: options.driver, volumeHandle: options.handle, ...options.csi },
    },
  };
}

export function claim(
  namespace: string,
  name: string,
  options: { block?: boolean } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "",
      volumeMode: options.block ? "Block" : "Filesystem",
    },
  };
}

export function pod(
  namespace: string,
  name: string,
  options: { nodeName?: string; volumes?: NonNullable<Pod["spec"]>["volumes"]; fsGroup?: number },
): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: {
      ...(options.nodeName ? { nodeName: options.nodeName } : {}),
      containers: [{ name: "app", image: "busybox" }],
      volumes: options.volumes ?? [],
      ...(options.fsGroup !== undefined ? { securityContext: { fsGroup: options.fsGroup } } : {}),
    },
  };
}

/** Creates a PV and a claim and binds them as the PV controller would (spec + status). */
export async function boundClaim(
  client: KubeClient,
  namespace: string,
  name: string,
  pv: PersistentVolume,
  options: { block?: boolean } = {},
): Promise<{ pv: PersistentVolume; claim: PersistentVolumeClaim }> {
  const pvc = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    ...claim(namespace, name, options),
    spec: { ...claim(namespace, name, options).spec, volumeName: pv.metadata?.name ?? "" },
  });
  const created = await client.create<PersistentVolume>(GVR.persistentVolumes, {
    ...pv,
    spec: {
      ...pv.spec,
      claimRef: { kind: "PersistentVolumeClaim", namespace, name, uid: pvc.metadata?.uid ?? "" },
    },
  });
  await client.patch(
    GVR.persistentVolumes,
    created.metadata?.name ?? "",
    { status: { phase: "Bound" } },
    {
      subresource: "status",
    },
  );
  const bound = await client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    name,
    { status: { phase: "Bound", accessModes: ["ReadWriteOnce"], capacity: pv.spec?.capacity ?? {} } },
    { namespace, subresource: "status" },
  );
  return { pv: created, claim: bound };
}

/** Plays the attacher: creates (if needed) the VolumeAttachment and marks it attached. */
export async function markAttached(
  client: KubeClient,
  options: {
    name: string;
    driver: string;
    pvName: string;
    nodeName: string;
    metadata?: Record<string, string>;
  },
): Promise<void> {
  try {
    await client.create<VolumeAttachment>(GVR.volumeAttachments, {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttachment",
      metadata: { name: options.name },
      spec: {
        attacher: options.driver,
        nodeName: options.nodeName,
        source: { persistentVolumeName: options.pvName },
      },
    });
  } catch (error) {
    if (!errorMessage(error).includes("already exists")) throw error;
  }
  await client.patch(
    GVR.volumeAttachments,
    options.name,
    { status: { attached: true, attachmentMetadata: options.metadata ?? {} } },
    { subresource: "status" },
  );
}

export async function getPod(client: KubeClient, namespace: string, name: string): Promise<Pod | undefined> {
  try {
    return await client.get<Pod>(GVR.pods, name, { namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export async function podRunning(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<Pod | undefined> {
  const current = await getPod(client, namespace, name);
  return current?.status?.phase === "Running" ? current : undefined;
}

export function assertNoSecretIn(text: string, secret: string): void {
  assert.ok(!text.includes(secret), "a secret value reached a log or event");
}
