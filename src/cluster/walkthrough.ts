// The seed's walkthrough, run by `csikit up --walkthrough` (`npm start`): a StorageClass and a
// claim, a pod using it; wait until the volume is provisioned, attached, staged and published;
// write a file through the pod's mount and read it back from the driver's own storage; delete
// the pod (unpublish, unstage, detach) and the claim (DeleteVolume, PV gone). Each step prints
// how long it took. Every wait is bounded.

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
  type VolumeAttachment,
} from "../api/index.ts";
import { errorMessage, CsikitError, AbortedError } from "../base/index.ts";
import { isNotFound } from "../kube/index.ts";
import { KubeletPaths } from "../node/index.ts";
import type { RunningCluster } from "./cluster.ts";
import { mountsUnder } from "./drain.ts";

const NAMESPACE = "default";
const CLASS = "walkthrough";
const CLAIM = "walkthrough-claim";
const POD = "walkthrough-pod";
const VOLUME = "data";

export interface WalkthroughOptions {
  print: (line: string) => void;
  /** Bound of each step, ms. Default 60000. */
  stepTimeoutMs?: number;
}

async function until<T>(
  what: string,
  timeoutMs: number,
  signal: AbortSignal,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    if (signal.aborted) throw new AbortedError(`stopped while waiting for ${what}`);
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = errorMessage(error);
    }
    if (Date.now() > deadline)
      throw new CsikitError("CSIKIT_ERR_TIMEOUT", `timed out waiting for ${what}${last ? ` (${last})` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function gone(probe: () => Promise<unknown>): Promise<true | undefined> {
  try {
    await probe();
    return undefined;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}

export async function runWalkthrough(
  cluster: RunningCluster,
  options: WalkthroughOptions,
  signal: AbortSignal,
): Promise<void> {
  const { admin: client, driverName } = cluster;
  const timeout = options.stepTimeoutMs ?? 60_000;
  let step = 0;
  const timed = async <T>(
    label: string,
    work: () => Promise<T>,
    detail?: (value: T) => string,
  ): Promise<T> => {
    step += 1;
    const started = performance.now();
    const value = await work();
    const extra = detail ? ` — ${detail(value)}` : "";
    options.print(`[${step}] ${label}${extra} (${((performance.now() - started) / 1000).toFixed(2)}s)`);
    return value;
  };
  options.print("");
  options.print(
    "walkthrough (seed 000): StorageClass → claim → pod → provision, attach, stage, publish → write/read → delete",
  );

  // Leftovers of an interrupted earlier walkthrough would make the creates below fail.
  await client.delete(GVR.pods, POD, { namespace: NAMESPACE }).catch(() => {});
  await until("an earlier walkthrough pod to go", timeout, signal, () =>
    gone(() => client.get(GVR.pods, POD, { namespace: NAMESPACE })),
  );
  await client.delete(GVR.persistentVolumeClaims, CLAIM, { namespace: NAMESPACE }).catch(() => {});
  await until("an earlier walkthrough claim to go", timeout, signal, () =>
    gone(() => client.get(GVR.persistentVolumeClaims, CLAIM, { namespace: NAMESPACE })),
  );

  await timed(`StorageClass ${CLASS} created (provisioner ${driverName}, Immediate binding)`, async () => {
    await client.delete(GVR.storageClasses, CLASS).catch(() => {});
    await client.create<StorageClass>(GVR.storageClasses, {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: CLASS },
      provisioner: driverName,
      reclaimPolicy: "Delete",
      volumeBindingMode: "Immediate",
    });
  });
  await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: CLAIM, namespace: NAMESPACE },
    spec: {
      accessModes: ["ReadWriteOnce"],
      storageClassName: CLASS,
      resources: { requests: { storage: "1Mi" } },
    },
  });
  const volume = await timed(
    `claim ${CLAIM} created and bound: CreateVolume by the provisioner`,
    async () => {
      const claim = await until("the claim to be bound", timeout, signal, async () => {
        const c = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, CLAIM, {
          namespace: NAMESPACE,
        });
        return c.status?.phase === "Bound" ? c : undefined;
      });
      return client.get<PersistentVolume>(GVR.persistentVolumes, claim.spec?.volumeName ?? "");
    },
    (pv) => `PV ${pv.metadata?.name}, handle ${pv.spec?.csi?.volumeHandle}`,
  );
  const handle = volume.spec?.csi?.volumeHandle ?? "";
  const pvName = volume.metadata?.name ?? "";

  await client.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: POD, namespace: NAMESPACE },
    spec: {
      containers: [{ name: "app", image: "busybox", volumeMounts: [{ name: VOLUME, mountPath: "/data" }] }],
      volumes: [{ name: VOLUME, persistentVolumeClaim: { claimName: CLAIM } }],
    },
  });
  const scheduled = await timed(
    `pod ${POD} created and scheduled`,
    () =>
      until("the pod to be scheduled", timeout, signal, async () => {
        const pod = await client.get<Pod>(GVR.pods, POD, { namespace: NAMESPACE });
        return pod.spec?.nodeName ? pod : undefined;
      }),
    (pod) => `node ${pod.spec?.nodeName}`,
  );
  const nodeName = scheduled.spec?.nodeName ?? "";
  const podUID = scheduled.metadata?.uid ?? "";
  const paths = new KubeletPaths(cluster.layout.rootOf(nodeName));
  if (cluster.attachRequired)
    await timed("volume attached: ControllerPublishVolume by the attacher", () =>
      until("the VolumeAttachment to be attached", timeout, signal, async () => {
        const list = await client.list<VolumeAttachment>(GVR.volumeAttachments);
        return list.items.find(
          (a) =>
            a.spec?.source?.persistentVolumeName === pvName &&
            a.spec?.nodeName === nodeName &&
            a.status?.attached,
        );
      }),
    );
  else options.print(`    (no attach step: CSIDriver ${driverName} has attachRequired=false)`);
  const staging = paths.stagingTarget(driverName, handle);
  // A PV-backed volume's pod dir is named after the PV (the kubelet's spec name), not the pod's volume.
  const target = paths.publishTarget(podUID, pvName);
  const mounted = async (path: string): Promise<true | undefined> =>
    (await mountsUnder(cluster.layout.nodesDir)).includes(path) ? true : undefined;
  await timed(
    "volume staged: NodeStageVolume by the node agent",
    () => until("the staging mount", timeout, signal, () => mounted(staging)),
    () => staging,
  );
  await timed(
    "volume published: NodePublishVolume by the node agent",
    () => until("the publish mount", timeout, signal, () => mounted(target)),
    () => target,
  );
  await timed("pod Running", () =>
    until("the pod to run", timeout, signal, async () => {
      const pod = await client.get<Pod>(GVR.pods, POD, { namespace: NAMESPACE });
      return pod.status?.phase === "Running" ? pod : undefined;
    }),
  );
  const message = `hello from csikit, ${new Date().toISOString()}\n`;
  await timed(
    "file written through the pod's mount, read back from the driver's storage",
    async () => {
      await writeFile(join(target, "hello.txt"), message);
      const where =
        cluster.plan.driverSocket === undefined && cluster.plan.driverCommand === undefined
          ? join(cluster.layout.driverStateDir, "volumes", handle, "hello.txt")
          : join(target, "hello.txt");
      const back = await readFile(where, "utf8");
      if (back !== message)
        throw new CsikitError(
          "CSIKIT_ERR_WALKTHROUGH",
          `read back ${JSON.stringify(back)} from ${where}, wrote ${JSON.stringify(message)}`,
        );
      return where;
    },
    (where) => where,
  );

  await client.delete(GVR.pods, POD, { namespace: NAMESPACE });
  await timed("pod deleted: NodeUnpublishVolume by the node agent", async () => {
    await until("the pod to go", timeout, signal, () =>
      gone(() => client.get(GVR.pods, POD, { namespace: NAMESPACE })),
    );
    if ((await mountsUnder(cluster.layout.nodesDir)).includes(target))
      throw new CsikitError("CSIKIT_ERR_WALKTHROUGH", `${target} is still mounted after the pod went`);
  });
  const unmounted = async (path: string): Promise<true | undefined> =>
    (await mountsUnder(cluster.layout.nodesDir)).includes(path) ? undefined : true;
  await timed("volume unstaged: NodeUnstageVolume by the node agent", () =>
    until("the staging mount to go", timeout, signal, () => unmounted(staging)),
  );
  if (cluster.attachRequired)
    await timed("volume detached: ControllerUnpublishVolume, VolumeAttachment gone", () =>
      until("the VolumeAttachment to go", timeout, signal, async () => {
        const list = await client.list<VolumeAttachment>(GVR.volumeAttachments);
        return list.items.some((a) => a.spec?.source?.persistentVolumeName === pvName) ? undefined : true;
      }),
    );
  await client.delete(GVR.persistentVolumeClaims, CLAIM, { namespace: NAMESPACE });
  await timed("claim deleted: DeleteVolume by the provisioner, PV gone", () =>
    until("the PV to go", timeout, signal, () => gone(() => client.get(GVR.persistentVolumes, pvName))),
  );
  await client.delete(GVR.storageClasses, CLASS).catch(() => {});
  options.print("walkthrough done: every step passed");
  options.print("");
}
