// The default snapshot classes of `csikit up`: deploy/csi-hostpath-snapshotclass.yaml (the one
// copy a real cluster applies too) for the cluster's driver — csi-hostpath-snapclass and its
// group twin, both marked default. Applied only where the API server serves their CRDs, so a
// cluster started without them still comes up (and says what it skipped).

import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { GVR } from "../api/index.ts";
import { isNotFound, type KubeClient } from "../kube/index.ts";
import { applyManifests, type Manifest } from "./manifests.ts";

export const SNAPSHOT_CLASSES_FILE = fileURLToPath(
  new URL("../../deploy/csi-hostpath-snapshotclass.yaml", import.meta.url),
);

/** The classes of the deploy file, for `driverName`. */
export async function snapshotClassManifests(driverName: string): Promise<Manifest[]> {
  const documents = parseAllDocuments(await readFile(SNAPSHOT_CLASSES_FILE, "utf8"));
  return documents.map((document) => ({ ...(document.toJSON() as Manifest), driver: driverName }));
}

async function served(list: () => Promise<unknown>): Promise<boolean> {
  try {
    await list();
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** Applies the classes whose CRD is served; returns the names applied and the kinds skipped. */
export async function applySnapshotClasses(
  client: KubeClient,
  driverName: string,
  signal?: AbortSignal,
): Promise<{ applied: string[]; skipped: string[] }> {
  const manifests = await snapshotClassManifests(driverName);
  const applied: string[] = [];
  const skipped: string[] = [];
  for (const manifest of manifests) {
    const gvr =
      manifest.kind === "VolumeSnapshotClass" ? GVR.volumeSnapshotClasses : GVR.volumeGroupSnapshotClasses;
    if (!(await served(() => client.list(gvr, {}, signal)))) {
      skipped.push(manifest.kind);
      continue;
    }
    await applyManifests(client, [manifest], signal);
    applied.push(manifest.metadata.name);
  }
  return { applied, skipped };
}
