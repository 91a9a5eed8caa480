// Test fixture for the attach/detach controller (no tests of its own): a real API server, the
// controller on its own informer factory (restartable), builders for managed nodes, bound
// claims and scheduled pods, and condition waits. The test plays the attacher (VA status), the
// node agent (volumesInUse) and the PV controller (bound claims) by writing objects.

import type { TestContext } from "node:test";
import {
  GVR,
  type Node,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
} from "../../src/api/index.ts";
import { InformerFactory, type KubeClient, type KubeObject } from "../../src/kube/index.ts";
import { startTestServer, type TestServer } from "./kube-server.ts";
import {
  startAttachDetachController,
  type AttachDetachOptions,
} from "../../src/controllers/attachdetach/index.ts";
import { until } from "./until.ts";
import { defer } from "./cleanup.ts";

export const DRIVER = "hostpath.csi.k8s.io";
export const MANAGED = { "volumes.kubernetes.io/controller-managed-attach-detach": "true" };

export interface Running {
  stop(): Promise<void>;
}

/** Starts the controller with a fresh informer factory; `stop` waits until it has stopped. */
function runController(client: KubeClient, options: Partial<AttachDetachOptions>): Running {
  const informers = new InformerFactory({ client, freeze: true });
  const controller = new AbortController();
  const running = startAttachDetachController({ client, informers, ...options }, controller.signal);
  const informersRunning = informers.start(controller.signal);
  let stopped: Promise<void> | undefined;
  return {
    stop() {
      controller.abort();
      stopped ??= Promise.all([running, informersRunning]).then(() => {});
      return stopped;
    },
  };
}

export interface Env {
  client: KubeClient;
  /** Starts a controller, stopped (if still running) before the server when the test ends. */
  run: (options?: Partial<AttachDetachOptions>) => Running;
}

/** A server for one test; everything started through it is stopped after the test, server last. */
export async function startEnv(t: TestContext): Promise<Env> {
  const env: TestServer = await startTestServer();
  const client = env.client();
  const running: Running[] = [];
  defer(t, async () => {
    for (const controller of running.reverse()) await controller.stop();
    client.close();
    await env.stop();
  });
  return {
    client,
    run: (options = {}) => {
      const controller = runController(client, options);
      running.push(controller);
      return controller;
    },
  };
}

/** A node; `ready` sets its Ready condition (status written through the status subresource). */
export async function createNode(
  client: KubeClient,
  name: string,
  options: { managed?: boolean; ready?: boolean } = {},
): Promise<void> {
  const created = await client.create<Node>(GVR.nodes, {
    metadata: { name, annotations: options.managed === false ? {} : { ...MANAGED } },
  });
  if (options.ready !== false) {
    await client.updateStatus(GVR.nodes, {
      ...created,
      status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }] },
    });
  }
}

/** A CSI PV bound to a claim of the same name in "default", both sides as the PV controller leaves them. */
export async function boundVolume(
  client: KubeClient,
  name: string,
  handle: string,
  driver = DRIVER,
): Promise<void> {
  const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    metadata: { name, namespace: "default", annotations: { "pv.kubernetes.io/bind-completed": "yes" } },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      volumeName: `pv-${name}`,
      storageClassName: "",
    },
  });
  await client.updateStatus(GVR.persistentVolumeClaims, { ...claim, status: { phase: "Bound" } });
  await client.create(GVR.persistentVolumes, {
    metadata: { name: `pv-${name}` },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      claimRef: {
        kind: "PersistentVolumeClaim",
        apiVersion: "v1",
        namespace: "default",
        name,
        uid: claim.metadata?.uid ?? "",
      },
      csi: { driver, volumeHandle: handle },
    },
  });
}

/** A pod already scheduled to `nodeName` using the named claims (and any extra volumes). */
export async function scheduledPod(
  client: KubeClient,
  name: string,
  nodeName: string,
  claims: string[],
  extra: NonNullable<NonNullable<Pod["spec"]>["volumes"]> = [],
): Promise<Pod> {
  return client.create<Pod>(GVR.pods, {
    metadata: { name, namespace: "default" },
    spec: {
      nodeName,
      containers: [{ name: "c", image: "busybox" }],
      volumes: [
        ...claims.map((claimName) => ({ name: claimName, persistentVolumeClaim: { claimName } })),
        ...extra,
      ],
    },
  });
}

export async function attachment(client: KubeClient, name: string): Promise<VolumeAttachment | undefined> {
  try {
    return await client.get<VolumeAttachment>(GVR.volumeAttachments, name);
  } catch {
    return undefined;
  }
}

/** Plays the attacher: status.attached (or attachError). */
export async function setAttached(
  client: KubeClient,
  name: string,
  status: VolumeAttachment["status"],
): Promise<void> {
  const current = await until(() => attachment(client, name), `VolumeAttachment ${name}`);
  await client.updateStatus(GVR.volumeAttachments, { ...current, status });
}

/** Plays the node agent: status.volumesInUse. */
export async function setVolumesInUse(
  client: KubeClient,
  nodeName: string,
  volumesInUse: string[],
): Promise<void> {
  await client.patch(
    GVR.nodes,
    nodeName,
    { status: { volumesInUse } },
    { subresource: "status", type: "merge" },
  );
}

export async function volumesAttached(client: KubeClient, nodeName: string): Promise<string[]> {
  const node = await client.get<Node>(GVR.nodes, nodeName);
  return (node.status?.volumesAttached ?? []).map((v) => `${v.name}|${v.devicePath}`);
}

interface CoreEventLite extends KubeObject {
  involvedObject: { name?: string };
  reason: string;
  message: string;
  source?: { component?: string };
}

export function podEvent(client: KubeClient, podName: string, reason: string): Promise<CoreEventLite> {
  return until(async () => {
    const events = await client.list<CoreEventLite>(GVR.events, { namespace: "default" });
    return events.items.find((e) => e.involvedObject.name === podName && e.reason === reason);
  }, `${reason} event on ${podName}`);
}

export async function deletePod(client: KubeClient, name: string): Promise<void> {
  await client.delete(GVR.pods, name, { namespace: "default" });
}
