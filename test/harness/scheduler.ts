// Test fixture for the scheduler (no tests of its own): a real API server, a scheduler on the
// shared informer factory, object builders and condition waits. The test plays the other roles
// (PV controller binding claims, provisioner) by writing objects directly.

import {
  GVR,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../src/api/index.ts";
import { InformerFactory, type KubeClient, type KubeObject } from "../../src/kube/index.ts";
import { startTestServer, type TestServer } from "./kube-server.ts";
import { startScheduler, type SchedulerOptions } from "../../src/controllers/scheduler/index.ts";
import { until } from "./until.ts";

export const DRIVER = "hostpath.csi.k8s.io";

export interface Cluster {
  env: TestServer;
  client: KubeClient;
  /** Stops the scheduler and starts a fresh one (new informers, no memory). */
  restartScheduler(): Promise<void>;
  stop(): Promise<void>;
}

function runScheduler(client: KubeClient, options: Partial<SchedulerOptions>): () => Promise<void> {
  const informers = new InformerFactory({ client, freeze: true });
  const controller = new AbortController();
  const scheduler = startScheduler(
    { client, informers, podInitialBackoffMs: 100, podMaxBackoffMs: 500, ...options },
    controller.signal,
  );
  const informersRunning = informers.start(controller.signal);
  return async () => {
    controller.abort();
    await Promise.all([scheduler, informersRunning]);
  };
}

/** A server with a running scheduler; `stop` tears both down (call it in t.after). */
export async function startCluster(options: Partial<SchedulerOptions> = {}): Promise<Cluster> {
  const env = await startTestServer();
  const client = env.client();
  let stopScheduler = runScheduler(client, options);
  return {
    env,
    client,
    async restartScheduler() {
      await stopScheduler();
      stopScheduler = runScheduler(client, options);
    },
    async stop() {
      await stopScheduler();
      client.close();
      await env.stop();
    },
  };
}

export function node(name: string, labels: Record<string, string> = {}, spec: Node["spec"] = {}): Node {
  return { metadata: { name, labels: { "kubernetes.io/hostname": name, ...labels } }, spec };
}

export function pod(name: string, spec: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    metadata: { name, namespace: "default" },
    spec: { containers: [{ name: "c", image: "busybox" }], ...spec },
  };
}

export function claimVolume(claimName: string): NonNullable<NonNullable<Pod["spec"]>["volumes"]> {
  return [{ name: "data", persistentVolumeClaim: { claimName } }];
}

export function csiVolume(
  name: string,
  handle: string,
  extra: Partial<NonNullable<PersistentVolume["spec"]>> = {},
): PersistentVolume {
  return {
    metadata: { name },
    spec: {
      capacity: { storage: "10Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      csi: { driver: DRIVER, volumeHandle: handle },
      ...extra,
    },
  };
}

export function claim(
  name: string,
  spec: Partial<NonNullable<PersistentVolumeClaim["spec"]>> = {},
  annotations: Record<string, string> = {},
): PersistentVolumeClaim {
  return {
    metadata: { name, namespace: "default", annotations },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "5Mi" } }, ...spec },
  };
}

/** A claim already bound to `volumeName`, as the PV controller leaves it. */
export function boundClaim(name: string, volumeName: string, storageClassName = ""): PersistentVolumeClaim {
  return claim(name, { volumeName, storageClassName }, { "pv.kubernetes.io/bind-completed": "yes" });
}

/** Plays the PV controller: binds the claim to the PV (both sides, spec then status). */
export async function bindClaim(client: KubeClient, claimName: string, volumeName: string): Promise<void> {
  const volume = await client.get<PersistentVolume>(GVR.persistentVolumes, volumeName);
  const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, claimName, {
    namespace: "default",
  });
  volume.spec = {
    ...volume.spec,
    claimRef: {
      kind: "PersistentVolumeClaim",
      apiVersion: "v1",
      namespace: "default",
      name: claimName,
      uid: current.metadata?.uid ?? "",
    },
  };
  await client.update(GVR.persistentVolumes, volume);
  current.spec = { ...current.spec, volumeName };
  current.metadata = {
    ...current.metadata,
    annotations: { ...current.metadata?.annotations, "pv.kubernetes.io/bind-completed": "yes" },
  };
  const updated = await client.update(GVR.persistentVolumeClaims, current);
  await client.updateStatus(GVR.persistentVolumeClaims, { ...updated, status: { phase: "Bound" } });
}

export async function create<T extends KubeObject>(
  client: KubeClient,
  gvr: Parameters<KubeClient["create"]>[0],
  objects: T[],
): Promise<void> {
  for (const object of objects) await client.create(gvr, object);
}

export async function getPod(client: KubeClient, name: string): Promise<Pod> {
  return client.get<Pod>(GVR.pods, name, { namespace: "default" });
}

/** Waits until the pod is bound; returns its node. */
export function scheduledNode(client: KubeClient, name: string): Promise<string> {
  return until(async () => (await getPod(client, name)).spec?.nodeName || undefined, `pod ${name} bound`);
}

interface CoreEventLite extends KubeObject {
  involvedObject: { name?: string };
  reason: string;
  message: string;
  type: string;
  source?: { component?: string };
}

/** Waits for an event with this reason on the pod and a message passing `match`. */
export function podEvent(
  client: KubeClient,
  podName: string,
  reason: string,
  match: (message: string) => boolean = () => true,
): Promise<CoreEventLite> {
  return until(async () => {
    const events = await client.list<CoreEventLite>(GVR.events, { namespace: "default" });
    return events.items.find(
      (e) => e.involvedObject.name === podName && e.reason === reason && match(e.message),
    );
  }, `${reason} event on ${podName}`);
}
