// Snapshots without a snapshot controller: the upstream snapshot CRDs installed from the API
// server's testdata, and a VolumeSnapshot with its VolumeSnapshotContent written as the snapshot
// controller leaves them (bound, ready), for restore tests of the provisioner and of `up`.

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { GVR } from "../../src/api/index.ts";
import type { KubeClient, KubeObject } from "../../src/kube/index.ts";
import { until } from "./until.ts";

const TESTDATA = fileURLToPath(new URL("../../src/apiserver/resources/testdata/", import.meta.url));

export async function installSnapshotCrds(client: KubeClient): Promise<void> {
  for (const file of ["volumesnapshotclasses", "volumesnapshotcontents", "volumesnapshots"]) {
    const crd = parse(
      await readFile(join(TESTDATA, `snapshot.storage.k8s.io_${file}.yaml`), "utf8"),
    ) as KubeObject;
    await client.create(GVR.customResourceDefinitions, crd);
  }
  await until(async () => {
    await client.list(GVR.volumeSnapshots, { namespace: "default" });
    await client.list(GVR.volumeSnapshotContents);
    return true;
  }, "snapshot CRDs served");
}

export interface SnapshotObjects {
  name: string;
  driver: string;
  handle: string;
  sizeBytes: number;
  sourceVolumeMode?: "Filesystem" | "Block";
  allowModeChange?: boolean;
  finalizers?: string[];
}

/** Writes a VolumeSnapshot and its content as the snapshot controller leaves them: bound, ready. */
export async function writeReadySnapshot(client: KubeClient, options: SnapshotObjects): Promise<void> {
  const vs = await client.create<KubeObject & { spec?: unknown; status?: unknown }>(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: {
      name: options.name,
      namespace: "default",
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
        ...(options.allowModeChange
          ? { annotations: { "snapshot.storage.kubernetes.io/allow-volume-mode-change": "true" } }
          : {}),
      },
      spec: {
        driver: options.driver,
        deletionPolicy: "Delete",
        source: { snapshotHandle: options.handle },
        volumeSnapshotRef: { name: options.name, namespace: "default", uid: vs.metadata!.uid! },
        sourceVolumeMode: options.sourceVolumeMode ?? "Filesystem",
      },
    },
  );
  await client.updateStatus(GVR.volumeSnapshotContents, {
    ...content,
    status: { snapshotHandle: options.handle, readyToUse: true, restoreSize: options.sizeBytes },
  });
  await client.updateStatus(GVR.volumeSnapshots, {
    ...vs,
    status: {
      boundVolumeSnapshotContentName: `content-${options.name}`,
      readyToUse: true,
      restoreSize: "1Mi",
    },
  });
}
