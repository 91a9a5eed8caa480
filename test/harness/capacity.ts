// Test fixture of the capacity tests (no tests of its own): the real embedded API server, a
// scripted CSI controller answering GetCapacity from a table over real gRPC on a Unix socket,
// helpers to create nodes, CSINodes and classes, and a runner for the controller with its own
// informer factory that is stopped when the test ends.

import assert from "node:assert/strict";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { Registry } from "prom-client";
import {
  GVR,
  type CSINode,
  type CSIStorageCapacity,
  type Node,
  type StorageClass,
  type VolumeBindingMode,
} from "../../src/api/index.ts";
import { FakeClock } from "../../src/base/index.ts";
import { CsiClient, CsiError, GrpcStatus, serveCsi, type GetCapacityRequest } from "../../src/csi/index.ts";
import { InformerFactory, WorkQueueMetrics, type KubeClient } from "../../src/kube/index.ts";
import { startTestServer, type TestServer } from "./kube-server.ts";
import {
  startCapacityController,
  type CapacityControllerOptions,
} from "../../src/sidecars/provisioner/index.ts";
import { until } from "./until.ts";
import { defer, tempDir } from "./cleanup.ts";

export const DRIVER = "capacity.csikit.test";
export const ZONE = "topology.csikit.test/zone";
export const NAMESPACE = "csi-driver";
export const GiB = 1024n ** 3n;

export interface CapacityEnv {
  api: TestServer;
  client: KubeClient;
  csi: CsiClient;
  /** "<class parameter kind>/<zone>" → bytes available (missing: 0) and maximum volume size. */
  table: Map<string, { available: bigint; maximum?: bigint }>;
  /** Every GetCapacity request the driver received. */
  requests: GetCapacityRequest[];
  /** "<kind>/<zone>" → how many more GetCapacity calls fail with UNAVAILABLE. */
  failures: Map<string, number>;
}

export async function capacityEnv(t: TestContext): Promise<CapacityEnv> {
  const api = await startTestServer();
  defer(t, () => api.stop());
  const client = api.client();
  const dir = await tempDir(t, "csikit-capacity-");
  const table = new Map<string, { available: bigint; maximum?: bigint }>();
  const requests: GetCapacityRequest[] = [];
  const failures = new Map<string, number>();
  const endpoint = `unix://${join(dir, "csi.sock")}`;
  const server = await serveCsi({
    endpoint,
    controller: {
      getCapacity: (request) => {
        requests.push(request);
        const zone = request.accessibleTopology?.segments[ZONE] ?? "";
        const key = `${request.parameters["kind"] ?? ""}/${zone}`;
        const failing = failures.get(key) ?? 0;
        if (failing > 0) {
          failures.set(key, failing - 1);
          return Promise.reject(new CsiError(GrpcStatus.UNAVAILABLE, "storage backend busy"));
        }
        const row = table.get(key);
        return Promise.resolve({
          availableCapacity: String(row?.available ?? 0n),
          ...(row?.maximum !== undefined ? { maximumVolumeSize: { value: String(row.maximum) } } : {}),
        });
      },
    },
  });
  defer(t, () => server.close());
  const csi = CsiClient.connect(endpoint);
  defer(t, () => csi.close());
  await client.create(GVR.namespaces, { metadata: { name: NAMESPACE } });
  return { api, client, csi, table, requests, failures };
}

/** A Node with a zone label and its CSINode with the driver's zone key. */
export async function addNode(
  client: KubeClient,
  name: string,
  zone: string,
  options: { driver?: boolean } = {},
): Promise<void> {
  await client.create<Node>(GVR.nodes, { metadata: { name, labels: { [ZONE]: zone } } });
  await client.create<CSINode>(GVR.csiNodes, {
    metadata: { name },
    spec: {
      drivers: options.driver === false ? [] : [{ name: DRIVER, nodeID: `${name}-id`, topologyKeys: [ZONE] }],
    },
  });
}

export async function setZone(client: KubeClient, name: string, zone: string): Promise<void> {
  await client.patch(GVR.nodes, name, { metadata: { labels: { [ZONE]: zone } } });
}

export async function addClass(
  client: KubeClient,
  name: string,
  kind: string,
  mode: VolumeBindingMode = "WaitForFirstConsumer",
  provisioner = DRIVER,
): Promise<void> {
  await client.create<StorageClass>(GVR.storageClasses, {
    metadata: { name },
    provisioner,
    parameters: { kind },
    volumeBindingMode: mode,
  });
}

export interface Running {
  clock: FakeClock;
  registry: Registry;
  /** Stops the controller and its informers; idempotent. */
  stop(): Promise<void>;
}

/** Starts the controller (informers requested first, then the factory started), stopped at test end. */
export function runCapacity(
  t: TestContext,
  env: CapacityEnv,
  options: Partial<CapacityControllerOptions> = {},
): Running {
  const clock = new FakeClock();
  const registry = new Registry();
  const informers = new InformerFactory({ client: env.client, freeze: true });
  const abort = new AbortController();
  const controller = startCapacityController(
    {
      client: env.client,
      informers,
      csi: env.csi,
      driverName: DRIVER,
      namespace: NAMESPACE,
      ownerReference: null,
      clock,
      registry,
      workQueueMetrics: new WorkQueueMetrics({ registry }),
      ...options,
    },
    abort.signal,
  );
  const informing = informers.start(abort.signal);
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      abort.abort();
      await Promise.all([controller, informing]);
    })();
    return stopped;
  };
  defer(t, stop);
  return { clock, registry, stop };
}

export async function listCapacities(
  client: KubeClient,
  namespace = NAMESPACE,
): Promise<CSIStorageCapacity[]> {
  return (await client.list<CSIStorageCapacity>(GVR.csiStorageCapacities, { namespace })).items;
}

/** "<class> <zone>=<capacity>[/<maximum>]" per object, sorted: the shape tests compare. */
export function summary(objects: readonly CSIStorageCapacity[]): string[] {
  return objects
    .map((o) => {
      const zone = o.nodeTopology?.matchLabels?.[ZONE] ?? "*";
      const max = o.maximumVolumeSize !== undefined ? `/${o.maximumVolumeSize}` : "";
      return `${o.storageClassName} ${zone}=${o.capacity}${max}`;
    })
    .sort();
}

/** Waits until the objects in NAMESPACE summarise to `expected` exactly. */
export async function untilObjects(
  client: KubeClient,
  expected: string[],
  what: string,
): Promise<CSIStorageCapacity[]> {
  const want = [...expected].sort();
  let last: string[] = [];
  try {
    return await until(async () => {
      const objects = await listCapacities(client);
      last = summary(objects);
      return JSON.stringify(last) === JSON.stringify(want) ? objects : undefined;
    }, what);
  } catch (error) {
    assert.deepEqual(last, want, `${what}: ${String(error)}`);
    throw error;
  }
}
