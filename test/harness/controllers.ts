// Test fixture for the controller loops (no tests of its own): the real embedded API server,
// object builders for volumes, claims, classes, pods and nodes, a bounded poll, and a helper
// that runs loops from the registry until the test ends, the API server with RBAC and the
// controllers' own identity (startControllersCluster). Tests play the provisioner's and the
// kubelet's roles by writing objects directly.

import {
  GVR,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type PersistentVolumeSpec,
  type Pod,
  type StorageClass,
} from "../../src/api/index.ts";
import { silentLogger } from "../../src/base/index.ts";
import {
  isNotFound,
  type CoreEvent,
  KubeClient,
  loadKubeConfig,
  type KubeObject,
  CORE_EVENTS,
} from "../../src/kube/index.ts";
import { sharedTestServer, startTestServer, type TestServer } from "./kube-server.ts";
import { CONTROLLER_LOOPS, runControllers, type RunControllersOptions } from "../../src/controllers/index.ts";
import { until } from "./until.ts";
import type { TestContext } from "node:test";
import { startRbacCluster, type RbacCluster } from "./rbac.ts";
import { defer } from "./cleanup.ts";

export { sharedTestServer, startTestServer, type TestServer };

export const NS = "default";
export const DRIVER = "hostpath.csi.k8s.io";

/** Runs the named loops (all by default) until the returned stop() is awaited. */
export function runLoops(
  client: KubeClient,
  options: Partial<RunControllersOptions> = {},
): { stop: () => Promise<void>; done: Promise<void> } {
  const controller = new AbortController();
  const done = runControllers(
    {
      client,
      logger: silentLogger,
      knobs: { pvClaimBinderSyncPeriodMs: 300 },
      loops: CONTROLLER_LOOPS,
      freezeCache: true,
      ...options,
    },
    controller.signal,
  );
  return {
    done,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

export async function getOrUndefined<T extends KubeObject>(
  client: KubeClient,
  gvr: typeof GVR.persistentVolumes,

  name: string,
  namespace?: string,
): Promise<T | undefined> {
  try {
    return await client.get<T>(gvr, name, namespace ? { namespace } : {});
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export function pv(
  name: string,
  spec: Partial<PersistentVolumeSpec> & { size?: string } = {},
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): PersistentVolume {
  const { size = "1Gi", ...rest } = spec;
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, ...meta },
    spec: {
      capacity: { storage: size },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      csi: { driver: DRIVER, volumeHandle: name },
      ...rest,
    },
  };
}

export function pvc(
  name: string,
  spec: Partial<NonNullable<PersistentVolumeClaim["spec"]>> & { size?: string } = {},
  meta: { annotations?: Record<string, string> } = {},
): PersistentVolumeClaim {
  const { size = "1Gi", ...rest } = spec;
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NS, ...meta },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: size } }, ...rest },
  };
}

export function storageClass(name: string, extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name },
    provisioner: DRIVER,
    ...extra,
  };
}

export function pod(name: string, claimName: string, nodeName?: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: {
      containers: [{ name: "c", image: "busybox" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
      ...(nodeName ? { nodeName } : {}),
    },
  };
}

export function node(name: string, labels: Record<string, string>): Node {
  return { apiVersion: "v1", kind: "Node", metadata: { name, labels } };
}

/** Events about one object (by name), reason → messages. */
export async function eventsFor(client: KubeClient, name: string, namespace = NS): Promise<CoreEvent[]> {
  const list = await client.list<CoreEvent>(CORE_EVENTS, { namespace });
  return list.items.filter((event) => event.involvedObject.name === name);
}

export async function waitForEvent(
  client: KubeClient,
  name: string,
  reason: string,
  namespace = NS,
): Promise<CoreEvent> {
  return until(
    async () => (await eventsFor(client, name, namespace)).find((event) => event.reason === reason),
    `event ${reason} on ${name}`,
  );
}

export async function claimPhase(
  client: KubeClient,
  name: string,
): Promise<PersistentVolumeClaim | undefined> {
  return getOrUndefined<PersistentVolumeClaim>(client, GVR.persistentVolumeClaims, name, NS);
}

export async function waitClaimBound(
  client: KubeClient,
  name: string,
  limitMs?: number,
): Promise<PersistentVolumeClaim> {
  return until(
    async () => {
      const claim = await claimPhase(client, name);
      return claim?.status?.phase === "Bound" ? claim : undefined;
    },
    `claim ${name} Bound`,
    { timeoutMs: limitMs },
  );
}

export async function waitVolumePhase(
  client: KubeClient,
  name: string,
  phase: string,
): Promise<PersistentVolume> {
  return until(async () => {
    const volume = await getOrUndefined<PersistentVolume>(client, GVR.persistentVolumes, name);
    return volume?.status?.phase === phase ? volume : undefined;
  }, `volume ${name} ${phase}`);
}

/** The user `csikit up` runs the controllers as (src/cluster/components.ts). */
export const CONTROLLERS_USER = "system:kube-controller-manager";

export interface ControllersCluster {
  rbac: RbacCluster;
  /** The admin's client (system:masters): the test plays users and the kubelet with it. */
  admin: KubeClient;
  /** A client with the controllers' identity, bound by deploy/rbac/csikit-controllers.yaml. */
  controllers: KubeClient;
  /** The controllers' kubeconfig (for a `csikit controllers` process). */
  controllersKubeconfig: string;
}

/**
 * The API server with RBAC on and deploy/rbac applied, and the controllers' identity, so loops
 * run as `csikit up` runs them: a call their Role does not allow fails the test with a 403.
 */
export async function startControllersCluster(t: TestContext): Promise<ControllersCluster> {
  const rbac = await startRbacCluster(t, {
    staticIdentities: [{ component: "controllers", user: CONTROLLERS_USER, groups: [] }],
  });
  const controllersKubeconfig = await rbac.staticKubeconfig("controllers");
  const controllers = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: controllersKubeconfig }),
    qps: 1000,
    burst: 1000,
  });
  defer(t, () => controllers.close());
  return { rbac, admin: rbac.admin, controllers, controllersKubeconfig };
}

/** Marks a pod Running and Ready, as a node agent does once its volumes are published. */
export async function markPodReady(client: KubeClient, name: string, namespace = NS): Promise<void> {
  const current = await client.get<Pod>(GVR.pods, name, { namespace });
  const now = new Date().toISOString();
  await client.updateStatus(GVR.pods, {
    ...current,
    status: {
      ...current.status,
      phase: "Running",
      conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }],
    },
  });
}
