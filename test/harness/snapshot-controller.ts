// Fixture of the snapshot controller's tests (test/harness, because only tests may import the
// API server): the real embedded API server under RBAC with the snapshot CRDs, the controller's
// own ServiceAccount kubeconfig, the stand-in of the upstream-behaving sidecar, the controller
// started in-process from real command-line flags, and helpers that play the PV controller's and
// the user's parts (a claim bound to a CSI PV, classes, snapshots).

import type { TestContext } from "node:test";
import {
  GVR,
  type PersistentVolumeClaim,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../../src/api/index.ts";
import { Flags, LOGGING_FLAGS, parseFlags } from "../../src/base/index.ts";
import { isNotFound, type KubeClient, type KubeObject } from "../../src/kube/index.ts";
import {
  SNAPSHOT_CONTROLLER_FLAGS,
  snapshotControllerOptionsFromFlags,
  startSnapshotController,
} from "../../src/controllers/index.ts";
import { defer } from "./cleanup.ts";
import { startRbacCluster, type RbacCluster } from "./rbac.ts";
import { installSnapshotCrds } from "./snapshots.ts";
import { startSnapshotterStandIn, type SnapshotterStandIn } from "./snapshotter-stand-in.ts";
import { until } from "./until.ts";

export const DRIVER = "hostpath.csi.k8s.io";
export const IDENTITY = {
  kind: "serviceAccount",
  namespace: "kube-system",
  name: "snapshot-controller",
} as const;
export const FAST = [
  "--retry-interval-start=20ms",
  "--retry-interval-max=500ms",
  "--kube-api-qps=200",
  "--kube-api-burst=400",
];

export interface Fixture {
  cluster: RbacCluster;
  admin: KubeClient;
  kubeconfig: string;
  sidecar: SnapshotterStandIn;
}

export async function setup(t: TestContext, options: { groups?: boolean } = {}): Promise<Fixture> {
  const cluster = await startRbacCluster(t);
  await installSnapshotCrds(cluster.admin);
  const kubeconfig = await cluster.componentKubeconfig("snapshot-controller", IDENTITY);
  const sidecar = startSnapshotterStandIn({
    client: cluster.admin,
    driver: DRIVER,
    groups: options.groups ?? false,
  });
  defer(t, () => sidecar.stop());
  return { cluster, admin: cluster.admin, kubeconfig, sidecar };
}

/** The controller in-process, from real command-line flags. */
export function runController(
  t: TestContext,
  f: Fixture,
  args: readonly string[] = [],
  extra: { onHttpEndpoint?: (url: string) => void } = {},
): { stop(): Promise<void> } {
  const flags = new Flags(
    parseFlags({ ...LOGGING_FLAGS, ...SNAPSHOT_CONTROLLER_FLAGS }, [
      `--kubeconfig=${f.kubeconfig}`,
      ...FAST,
      ...args,
    ]),
  );
  const controller = new AbortController();
  const done = startSnapshotController(
    { ...snapshotControllerOptionsFromFlags(flags), ...extra },
    controller.signal,
  );
  const stop = async (): Promise<void> => {
    controller.abort();
    await done;
  };
  defer(t, stop);
  return { stop };
}

export async function createClass(
  admin: KubeClient,
  name: string,
  options: {
    deletionPolicy?: "Delete" | "Retain";
    isDefault?: boolean;
    parameters?: Record<string, string>;
    driver?: string;
  } = {},
): Promise<void> {
  await admin.create(GVR.volumeSnapshotClasses, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotClass",
    metadata: {
      name,
      ...(options.isDefault
        ? { annotations: { "snapshot.storage.kubernetes.io/is-default-class": "true" } }
        : {}),
    },
    driver: options.driver ?? DRIVER,
    deletionPolicy: options.deletionPolicy ?? "Delete",
    ...(options.parameters ? { parameters: options.parameters } : {}),
  } as KubeObject);
}

/** A claim bound to a CSI PV of DRIVER (the PV controller's part, written directly). */
export async function boundClaim(
  admin: KubeClient,
  name: string,
  options: { volumeMode?: "Block" | "Filesystem"; node?: string; labels?: Record<string, string> } = {},
): Promise<PersistentVolumeClaim> {
  const claim = await admin.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: "default", ...(options.labels ? { labels: options.labels } : {}) },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "",
      volumeName: `pv-${name}`,
      volumeMode: options.volumeMode ?? "Filesystem",
    },
  });
  await admin.create(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: `pv-${name}` },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      storageClassName: "",
      volumeMode: options.volumeMode ?? "Filesystem",
      persistentVolumeReclaimPolicy: "Delete",
      csi: { driver: DRIVER, volumeHandle: `vol-${name}` },
      claimRef: {
        kind: "PersistentVolumeClaim",
        apiVersion: "v1",
        namespace: "default",
        name,
        uid: claim.metadata.uid!,
      },
      ...(options.node
        ? {
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      { key: "kubernetes.io/hostname", operator: "In", values: [options.node] },
                    ],
                  },
                ],
              },
            },
          }
        : {}),
    },
  } as KubeObject);
  return admin.updateStatus(GVR.persistentVolumeClaims, { ...claim, status: { phase: "Bound" } });
}

export async function createSnapshot(
  admin: KubeClient,
  name: string,
  source: { claim?: string; content?: string },
  className?: string,
): Promise<VolumeSnapshot> {
  return admin.create<VolumeSnapshot>(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name, namespace: "default" },
    spec: {
      source: source.claim
        ? { persistentVolumeClaimName: source.claim }
        : { volumeSnapshotContentName: source.content! },
      ...(className ? { volumeSnapshotClassName: className } : {}),
    },
  });
}

export const getSnapshot = (admin: KubeClient, name: string) =>
  admin.get<VolumeSnapshot>(GVR.volumeSnapshots, name, { namespace: "default" });
export const getContent = (admin: KubeClient, name: string) =>
  admin.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, name);
export const gone = async (read: () => Promise<unknown>): Promise<boolean> =>
  read().then(
    () => false,
    (error: unknown) => {
      if (isNotFound(error)) return true;
      throw error;
    },
  );

export async function untilReady(admin: KubeClient, name: string): Promise<VolumeSnapshot> {
  return until(async () => {
    const snapshot = await getSnapshot(admin, name);
    return snapshot.status?.readyToUse === true ? snapshot : undefined;
  }, `snapshot ${name} ready`);
}

export async function eventReasons(admin: KubeClient, name: string): Promise<string[]> {
  const events = await admin.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(
    { group: "", version: "v1", resource: "events", kind: "Event", namespaced: true } as never,
    { namespace: "default" },
  );
  return events.items.filter((e) => e.involvedObject?.name === name).map((e) => e.reason ?? "");
}
