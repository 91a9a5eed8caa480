// Snapshots without a snapshot controller: every CRD deploy/crds ships (snapshot, group
// snapshot, changed-block tracking) installed as `csikit up` installs them, and a VolumeSnapshot
// with its VolumeSnapshotContent written as the snapshot controller leaves them (bound, ready),
// for restore tests of the provisioner and of `up`.

import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { GVR } from "../../src/api/index.ts";
import type { KubeClient, KubeObject } from "../../src/kube/index.ts";
import { until } from "./until.ts";

/** deploy/crds: the one copy of the upstream snapshot CRDs (tests, `up` and deploy/ read it). */
export const CRDS_DIR = fileURLToPath(new URL("../../deploy/crds/", import.meta.url));

interface CrdVersion {
  name: string;
  served?: boolean;
}
interface Crd extends KubeObject {
  spec: { group: string; scope: string; names: { plural: string }; versions: CrdVersion[] };
}

/** The CRDs of deploy/crds, parsed, in file-name order. */
export async function readSnapshotCrds(): Promise<Crd[]> {
  const files = (await readdir(CRDS_DIR)).filter((file) => file.endsWith(".yaml")).sort();
  return Promise.all(files.map(async (file) => parse(await readFile(join(CRDS_DIR, file), "utf8")) as Crd));
}

/** Installs every CRD of deploy/crds and waits until each served version of each answers a list. */
export async function installSnapshotCrds(client: KubeClient): Promise<void> {
  const crds = await readSnapshotCrds();
  for (const crd of crds) await client.create(GVR.customResourceDefinitions, crd);
  await until(async () => {
    for (const crd of crds) {
      for (const version of crd.spec.versions) {
        if (version.served !== true) continue;
        const namespaced = crd.spec.scope === "Namespaced";
        await client.list(
          {
            group: crd.spec.group,
            version: version.name,
            resource: crd.spec.names.plural,
          },
          namespaced ? { namespace: "default" } : {},
        );
      }
    }
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
