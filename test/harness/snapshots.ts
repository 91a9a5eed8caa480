// Snapshots without a snapshot controller: every CRD deploy/crds ships (snapshot, group
// snapshot, changed-block tracking) installed as `csikit up` installs them, and a VolumeSnapshot
// with its VolumeSnapshotContent written as the snapshot controller leaves them (bound, ready),
// for restore tests of the provisioner and of `up`.

import { GVR } from "../../src/api/index.ts";
import { CRDS_DIR, installCrds } from "../../src/cluster/index.ts";
import type { KubeClient, KubeObject } from "../../src/kube/index.ts";

/** deploy/crds: the one copy of the upstream snapshot CRDs (tests, `up` and deploy/ read it). */
export { CRDS_DIR };

/** Installs every CRD of deploy/crds as `up` does and waits until each served version answers a list. */
export async function installSnapshotCrds(client: KubeClient): Promise<void> {
  await installCrds(client, CRDS_DIR, 60_000, new AbortController().signal);
}

export interface SnapshotObjects {
  name: string;
  driver: string;
  handle: string;
  sizeBytes: number;
  sourceVolumeMode?: "Filesystem" | "Block";
  /** The content's allow-volume-mode-change annotation: true writes "true", a string as it is. */
  allowModeChange?: boolean | string;
  finalizers?: string[];
  /** Default "default". */
  namespace?: string;
  /** As the snapshot controller leaves a group snapshot's member: status.volumeGroupSnapshotName set. */
  groupSnapshotName?: string;
}

/** Writes a VolumeSnapshot and its content as the snapshot controller leaves them: bound, ready. */
export async function writeReadySnapshot(client: KubeClient, options: SnapshotObjects): Promise<void> {
  const namespace = options.namespace ?? "default";
  const allow = options.allowModeChange === true ? "true" : options.allowModeChange;
  const vs = await client.create<KubeObject & { spec?: unknown; status?: unknown }>(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: {
      name: options.name,
      namespace,
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    },
    spec: { source: { volumeSnapshotContentName: `content-${options.name}` } },
  });
  const content = await client.create<KubeObject & { spec?: unknown; status?: unknown }>(
    GVR.volumeSnapshotContents,
    {
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshotContent",
      metadata: {
        name: `content-${options.name}`,
        ...(typeof allow === "string"
          ? { annotations: { "snapshot.storage.kubernetes.io/allow-volume-mode-change": allow } }
          : {}),
      },
      spec: {
        driver: options.driver,
        deletionPolicy: "Delete",
        source: { snapshotHandle: options.handle },
        volumeSnapshotRef: { name: options.name, namespace, uid: vs.metadata!.uid! },
        sourceVolumeMode: options.sourceVolumeMode ?? "Filesystem",
      },
    },
  );
  await client.updateStatus(GVR.volumeSnapshotContents, {
    ...content,
    status: {
      snapshotHandle: options.handle,
      readyToUse: true,
      restoreSize: options.sizeBytes,
      ...(options.groupSnapshotName
        ? { volumeGroupSnapshotHandle: `group-${options.groupSnapshotName}` }
        : {}),
    },
  });
  await client.updateStatus(GVR.volumeSnapshots, {
    ...vs,
    status: {
      boundVolumeSnapshotContentName: `content-${options.name}`,
      readyToUse: true,
      restoreSize: String(options.sizeBytes),
      ...(options.groupSnapshotName ? { volumeGroupSnapshotName: options.groupSnapshotName } : {}),
    },
  });
}
