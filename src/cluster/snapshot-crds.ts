// The snapshot CRDs on `csikit up` (snapshot.storage.k8s.io, groupsnapshot.storage.k8s.io,
// cbt.storage.k8s.io), from the same files deploy/crds ships, and the driver's default
// VolumeSnapshotClass (as csi-driver-host-path's csi-hostpath-snapclass): installed when a
// snapshot component runs, idempotently (an existing CRD or class is left as it is), waiting
// until every served version answers.

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { ANNOTATIONS, GVR } from "../api/index.ts";
import { isAlreadyExists, type KubeClient, type KubeObject } from "../kube/index.ts";
import { pollUntil } from "./poll.ts";

export const CRDS_DIR = fileURLToPath(new URL("../../deploy/crds/", import.meta.url));
/** The default class `up` gives hostpath (upstream csi-driver-host-path's name). */
export const DEFAULT_SNAPSHOT_CLASS = "csi-hostpath-snapclass";

const createOrKeep = async (create: () => Promise<unknown>): Promise<void> => {
  try {
    await create();
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
};

/** Creates every CRD of deploy/crds that is missing; resolves once each is served. */
export async function installSnapshotCrds(client: KubeClient, signal: AbortSignal): Promise<void> {
  const files = (await readdir(CRDS_DIR)).filter((file) => file.endsWith(".yaml")).sort();
  for (const file of files) {
    const crd = parse(await readFile(join(CRDS_DIR, file), "utf8")) as KubeObject;
    await createOrKeep(() => client.create(GVR.customResourceDefinitions, crd, signal));
  }
  await pollUntil("the snapshot CRDs to be served", 60_000, signal, async () => {
    await client.list(GVR.volumeSnapshots, { namespace: "default", limit: 1 }, signal);
    await client.list(GVR.volumeSnapshotContents, { limit: 1 }, signal);
    await client.list(GVR.volumeGroupSnapshots, { namespace: "default", limit: 1 }, signal);
    await client.list(GVR.snapshotMetadataServices, { limit: 1 }, signal);
    return true;
  });
}

/** The driver's default VolumeSnapshotClass (Delete), unless one of that name exists. */
export async function ensureDefaultSnapshotClass(
  client: KubeClient,
  driverName: string,
  signal: AbortSignal,
): Promise<void> {
  await createOrKeep(() =>
    client.create(
      GVR.volumeSnapshotClasses,
      {
        apiVersion: "snapshot.storage.k8s.io/v1",
        kind: "VolumeSnapshotClass",
        metadata: {
          name: DEFAULT_SNAPSHOT_CLASS,
          annotations: { [ANNOTATIONS.isDefaultSnapshotClass.key]: "true" },
        },
        driver: driverName,
        deletionPolicy: "Delete",
      } as KubeObject,
      signal,
    ),
  );
}
