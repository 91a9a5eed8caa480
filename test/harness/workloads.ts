// Fixture of the workload loop tests (no tests of its own): the real API server with RBAC and
// deploy/rbac/ applied, the controllers running as `csikit up` runs them (user
// system:kube-controller-manager, csikit-controllers.yaml), Node objects, and a KUBELET
// STAND-IN: a test-only loop, run as the admin, that writes pod status the way a kubelet
// would (Running and Ready once bound to a node; Succeeded or Failed with a container exit code
// when the test says the pod's command ended) and finishes deletions as a kubelet does (a
// delete with grace 0 once the pod is terminating). It replaces no csikit component: the node
// agent does not run pod commands yet, and these tests are about the controllers.

import type { TestContext } from "node:test";
import { GVR, type Node, type Pod, type Taint } from "../../src/api/index.ts";
import { silentLogger } from "../../src/base/index.ts";
import {
  InformerFactory,
  KubeClient,
  WorkQueue,
  isConflict,
  isNotFound,
  loadKubeConfig,
  objectKey,
  runController,
} from "../../src/kube/index.ts";
import { CONTROLLER_LOOPS, runControllers, type ControllerKnobs } from "../../src/controllers/index.ts";
import { defer } from "./cleanup.ts";
import { forbidden, describeEvent, startRbacCluster, type RbacCluster } from "./rbac.ts";

export const NS = "default";
export const CONTROLLERS_USER = "system:kube-controller-manager";

export interface WorkloadCluster {
  rbac: RbacCluster;
  admin: KubeClient;
  /** The controllers' client (system:kube-controller-manager). */
  controllers: KubeClient;
  /** Kubeconfig of the controllers' identity (for a `csikit controllers` process). */
  controllersKubeconfig: string;
  /** Requests of the controllers' identity the server answered 403 (should stay empty). */
  forbidden(): string[];
}

export async function startWorkloadCluster(t: TestContext): Promise<WorkloadCluster> {
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
  return {
    rbac,
    admin: rbac.admin,
    controllers,
    controllersKubeconfig,
    forbidden: () => forbidden(rbac.audit, CONTROLLERS_USER).map(describeEvent),
  };
}

/** Runs the named loops in-process under the controllers' identity until the test ends. */
export function runWorkloadLoops(
  t: TestContext,
  cluster: WorkloadCluster,
  controllers: readonly string[],
  knobs: ControllerKnobs = {},
): { stop(): Promise<void> } {
  const controller = new AbortController();
  const done = runControllers(
    {
      client: cluster.controllers,
      logger: silentLogger,
      controllers,
      loops: CONTROLLER_LOOPS,
      freezeCache: true,
      knobs,
    },
    controller.signal,
  );
  const stop = async (): Promise<void> => {
    controller.abort();
    await done;
  };
  defer(t, stop);
  return { stop };
}

export function node(name: string, labels: Record<string, string> = {}, taints: Taint[] = []): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { "kubernetes.io/hostname": name, ...labels } },
    spec: taints.length > 0 ? { taints } : {},
    status: { conditions: [{ type: "Ready", status: "True" }] },
  };
}

export function podTemplate(
  labels: Record<string, string>,
  image = "busybox",
): {
  metadata: { labels: Record<string, string> };
  spec: { containers: { name: string; image: string }[] };
} {
  return { metadata: { labels }, spec: { containers: [{ name: "c", image }] } };
}

export interface KubeletStandInOptions {
  /** Whether a running pod reports Ready (default: all). Read at each pass: call resync() after changing. */
  ready?: (pod: Pod) => boolean;
  /** The exit code a pod's container ends with (undefined: it keeps running). Default: runs forever. */
  exitCode?: (pod: Pod) => number | undefined;
}

export interface KubeletStandIn {
  /** Looks at every pod again (after the test changed what ready/exitCode answer). */
  resync(): void;
  stop(): Promise<void>;
}

function now(): string {
  return new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** The kubelet stand-in described in the header; stopped when the test ends. */
export function runKubeletStandIn(
  t: TestContext,
  admin: KubeClient,
  options: KubeletStandInOptions = {},
): KubeletStandIn {
  const controller = new AbortController();
  const informers = new InformerFactory({ client: admin, logger: silentLogger });
  const pods = informers.informer<Pod>(GVR.pods);
  const queue = new WorkQueue<string>({ name: "kubelet-stand-in" });
  pods.addEventHandler({
    onAdd: (pod) => queue.add(objectKey(pod)),
    onUpdate: (_old, pod) => queue.add(objectKey(pod)),
  });
  const ready = options.ready ?? (() => true);
  const exitCode = options.exitCode ?? (() => undefined);
  const reconcile = async (key: string): Promise<void> => {
    const pod = pods.store.get(key);
    if (pod === undefined || !pod.spec?.nodeName) return;
    const name = pod.metadata?.name ?? "";
    const namespace = pod.metadata?.namespace ?? "";
    try {
      if (pod.metadata?.deletionTimestamp !== undefined) {
        await admin.request({
          method: "DELETE",
          path: `/api/v1/namespaces/${namespace}/pods/${name}`,
          body: {
            apiVersion: "v1",
            kind: "DeleteOptions",
            gracePeriodSeconds: 0,
            preconditions: { uid: pod.metadata.uid },
          },
        });
        return;
      }
      const phase = pod.status?.phase;
      if (phase === "Succeeded" || phase === "Failed") return;
      const code = exitCode(pod);
      const container = pod.spec.containers[0]?.name ?? "c";
      let status: Record<string, unknown>;
      if (code !== undefined) {
        status = {
          phase: code === 0 ? "Succeeded" : "Failed",
          conditions: [{ type: "Ready", status: "False", lastTransitionTime: now(), reason: "PodCompleted" }],
          containerStatuses: [
            {
              name: container,
              ready: false,
              restartCount: 0,
              image: pod.spec.containers[0]?.image ?? "",
              state: {
                terminated: {
                  exitCode: code,
                  reason: code === 0 ? "Completed" : "Error",
                  startedAt: pod.metadata?.creationTimestamp,
                  finishedAt: now(),
                },
              },
            },
          ],
        };
      } else {
        const isReady = ready(pod);
        const current = pod.status?.conditions?.find((c) => c.type === "Ready")?.status;
        if (phase === "Running" && current === (isReady ? "True" : "False")) return;
        status = {
          phase: "Running",
          startTime: pod.status?.startTime ?? now(),
          conditions: [{ type: "Ready", status: isReady ? "True" : "False", lastTransitionTime: now() }],
          containerStatuses: [
            {
              name: container,
              ready: isReady,
              restartCount: 0,
              image: pod.spec.containers[0]?.image ?? "",
              started: true,
              state: { running: { startedAt: now() } },
            },
          ],
        };
      }
      await admin.patch(GVR.pods, name, { status }, { namespace, subresource: "status" });
    } catch (error) {
      if (isNotFound(error) || isConflict(error)) return;
      throw error;
    }
  };
  const done = Promise.all([
    informers.start(controller.signal),
    runController(
      { name: "kubelet-stand-in", informers: [pods], queue, workers: 4, reconcile: (key) => reconcile(key) },
      controller.signal,
    ),
  ]);
  const stop = async (): Promise<void> => {
    controller.abort();
    queue.shutDown();
    await done;
  };
  defer(t, stop);
  return {
    resync: () => {
      for (const key of pods.store.keys()) queue.add(key);
    },
    stop,
  };
}

/** Active (not terminating, not finished) pods whose controller is `ownerUid`. */
export async function podsOwnedBy(admin: KubeClient, ownerUid: string, namespace = NS): Promise<Pod[]> {
  const list = await admin.list<Pod>(GVR.pods, { namespace });
  return list.items.filter(
    (pod) =>
      pod.metadata?.ownerReferences?.some((ref) => ref.uid === ownerUid && ref.controller === true) &&
      pod.metadata?.deletionTimestamp === undefined,
  );
}
