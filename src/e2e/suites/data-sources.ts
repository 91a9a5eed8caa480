// Volumes made from other volumes, as upstream's provisioning and multiVolume suites make them:
// a VolumeSnapshotClass from the driver's SnapshotClass source, a snapshot of a claim awaited
// until it is ready to use, a claim restored from a snapshot and a claim cloned from another
// claim (dataSource). Everything is made through the cluster API and cleaned up with the test's
// namespace (snapshots and claims) or as its cluster-scoped objects (the class).

import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import {
  GVR,
  type PersistentVolumeClaim,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
} from "../../api/index.ts";
import { CsikitError } from "../../base/index.ts";
import type { DriverDefinition } from "../catalogue/index.ts";
import { E2eCheckError } from "../model.ts";
import type { ClaimOptions, TestNamespace } from "../resources.ts";
import { locationOf, podVolume, randomContent, writeData } from "./checks.ts";

export const SNAPSHOT_GROUP = "snapshot.storage.k8s.io";

/**
 * A VolumeSnapshotClass for the test from the driver's SnapshotClass source: FromName gives the
 * driver's name and deletionPolicy Delete; an existing class or a manifest file is copied.
 */
export async function createSnapshotClass(
  namespace: TestNamespace,
  driver: DriverDefinition,
): Promise<VolumeSnapshotClass> {
  const source = driver.SnapshotClass;
  let base: Omit<VolumeSnapshotClass, "apiVersion" | "kind" | "metadata">;
  if (source.FromName) base = { driver: driver.DriverInfo.Name, deletionPolicy: "Delete" };
  else if (source.FromExistingClassName !== "") {
    const {
      apiVersion: _a,
      kind: _k,
      metadata: _m,
      ...rest
    } = await namespace.client.get<VolumeSnapshotClass>(
      GVR.volumeSnapshotClasses,
      source.FromExistingClassName,
    );
    base = rest;
  } else if (source.FromFile !== "") {
    const manifest = parseYaml(await readFile(source.FromFile, "utf8")) as VolumeSnapshotClass | null;
    if (manifest?.kind !== "VolumeSnapshotClass")
      throw new CsikitError(
        "CSIKIT_ERR_E2E_DRIVER",
        `SnapshotClass.FromFile ${source.FromFile}: not a VolumeSnapshotClass manifest (kind ${JSON.stringify(manifest?.kind)})`,
      );
    const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = manifest;
    base = rest;
  } else
    throw new CsikitError(
      "CSIKIT_ERR_E2E_DRIVER",
      `the test driver of ${driver.DriverInfo.Name} sets no SnapshotClass source (FromName, FromExistingClassName or FromFile)`,
    );
  return namespace.createObject<VolumeSnapshotClass>(GVR.volumeSnapshotClasses, {
    apiVersion: `${SNAPSHOT_GROUP}/v1`,
    kind: "VolumeSnapshotClass",
    metadata: { name: namespace.clusterName("vsc") },
    ...base,
  });
}

/** Snapshots the claim with the class and waits (bounded by SnapshotCreate) until it is ready to use. */
export async function createSnapshot(
  namespace: TestNamespace,
  claimName: string,
  snapshotClassName: string,
): Promise<VolumeSnapshot> {
  const created = await namespace.client.create<VolumeSnapshot>(GVR.volumeSnapshots, {
    apiVersion: `${SNAPSHOT_GROUP}/v1`,
    kind: "VolumeSnapshot",
    metadata: { name: namespace.nextName("snapshot"), namespace: namespace.name },
    spec: {
      volumeSnapshotClassName: snapshotClassName,
      source: { persistentVolumeClaimName: claimName },
    },
  });
  const name = created.metadata?.name ?? "";
  return namespace.waitFor(
    `snapshot ${namespace.name}/${name} to be ready to use`,
    "SnapshotCreate",
    async () => {
      const snapshot = await namespace.client.get<VolumeSnapshot>(GVR.volumeSnapshots, name, {
        namespace: namespace.name,
      });
      return snapshot.status?.readyToUse === true ? snapshot : undefined;
    },
  );
}

/** A claim of the class restored from the snapshot (dataSource VolumeSnapshot). */
export async function restoreClaim(
  namespace: TestNamespace,
  className: string,
  snapshotName: string,
  options: Omit<ClaimOptions, "dataSource"> = {},
): Promise<PersistentVolumeClaim> {
  return namespace.createClaim(className, {
    ...options,
    dataSource: { apiGroup: SNAPSHOT_GROUP, kind: "VolumeSnapshot", name: snapshotName },
  });
}

/** A claim of the class cloned from another claim of the namespace (dataSource PersistentVolumeClaim). */
export async function cloneClaim(
  namespace: TestNamespace,
  className: string,
  sourceClaim: string,
  options: Omit<ClaimOptions, "dataSource"> = {},
): Promise<PersistentVolumeClaim> {
  return namespace.createClaim(className, {
    ...options,
    dataSource: { kind: "PersistentVolumeClaim", name: sourceClaim },
  });
}

/** The claim's name, failing clearly when the API returned none. */
export function nameOf(object: { metadata?: { name?: string } }): string {
  const name = object.metadata?.name;
  if (!name) throw new E2eCheckError("the API server returned an object without a name");
  return name;
}

/** A source volume of the pattern with data written by a pod (gone again); its class, claim, node and data. */
export interface SourceVolume {
  className: string;
  claimName: string;
  block: boolean;
  node: string;
  content: string;
}

/** Creates the pattern's volume and writes data into it through a pod, deleted again. */
export async function sourceWithData(namespace: TestNamespace): Promise<SourceVolume> {
  const volume = await namespace.createVolume();
  const content = randomContent("source");
  const writer = await namespace.runPod({ volumes: [podVolume(volume)] });
  const node = (await namespace.getPod(writer)).spec?.nodeName ?? "";
  await writeData(namespace, writer, locationOf(volume), content);
  await namespace.deletePod(writer);
  return {
    className: volume.className ?? "",
    claimName: volume.claimName ?? "",
    block: volume.block,
    node,
    content,
  };
}
