// Snapshot steps shared by the snapshot suites, in the shape of upstream's SnapshotResource
// (test/e2e/storage/framework/snapshot_resource.go): a VolumeSnapshotClass from the driver's
// SnapshotClass source with the pattern's deletion policy, a dynamic snapshot of a claim, or a
// pre-provisioned one (a dynamic snapshot's handle re-imported through a VolumeSnapshotContent
// made by hand), the checks of the bound objects' fields, and a cleanup that never leaks the
// driver's snapshot (a Retain content is switched to Delete before it is deleted).

import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import {
  GVR,
  type DeletionPolicy,
  type Node,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { CsikitError } from "../../base/index.ts";
import { isNotFound } from "../../kube/index.ts";
import type { TestPattern } from "../catalogue/index.ts";
import { E2eCheckError, E2eSkip } from "../model.ts";
import type { TestNamespace } from "../resources.ts";
import type { TestContext } from "../suite.ts";

export const SNAPSHOT_API_GROUP = "snapshot.storage.k8s.io";
const SNAPSHOT_API_VERSION = `${SNAPSHOT_API_GROUP}/v1`;
/** Annotations of a content that carry its deletion secret: kept when it is re-imported. */
const DELETION_SECRET_PREFIX = "snapshot.storage.kubernetes.io/deletion-secret-";

/** What a snapshot test made: the class, the snapshot and the content bound to it. */
export interface SnapshotResource {
  snapshotClass: VolumeSnapshotClass;
  snapshot: VolumeSnapshot;
  content: VolumeSnapshotContent;
}

/** The driver's snapshot class (driver and parameters) from its SnapshotClass source. */
async function driverSnapshotClass(
  context: TestContext,
): Promise<{ driver: string; parameters: Record<string, string> }> {
  const { driver, client } = context;
  const source = driver.SnapshotClass;
  if (source.FromName) return { driver: driver.DriverInfo.Name, parameters: {} };
  if (source.FromExistingClassName !== "") {
    const existing = await client.get<VolumeSnapshotClass>(
      GVR.volumeSnapshotClasses,
      source.FromExistingClassName,
    );
    return { driver: existing.driver, parameters: { ...existing.parameters } };
  }
  if (source.FromFile !== "") {
    const manifest = parseYaml(await readFile(source.FromFile, "utf8")) as VolumeSnapshotClass | null;
    if (manifest?.kind !== "VolumeSnapshotClass")
      throw new CsikitError(
        "CSIKIT_ERR_E2E_DRIVER",
        `SnapshotClass.FromFile ${source.FromFile}: not a VolumeSnapshotClass manifest (kind ${JSON.stringify(manifest?.kind)})`,
      );
    return { driver: manifest.driver || driver.DriverInfo.Name, parameters: { ...manifest.parameters } };
  }
  throw new E2eSkip(`Driver ${driver.DriverInfo.Name} has no configured SnapshotClass - skipping`);
}

/** A VolumeSnapshotClass of the test with the pattern's deletion policy (deleted at cleanup). */
export async function createSnapshotClass(context: TestContext): Promise<VolumeSnapshotClass> {
  const { namespace, pattern } = context;
  const base = await driverSnapshotClass(context);
  return namespace.createObject<VolumeSnapshotClass>(GVR.volumeSnapshotClasses, {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: "VolumeSnapshotClass",
    metadata: { name: namespace.clusterName("vsc") },
    driver: base.driver,
    ...(Object.keys(base.parameters).length > 0 ? { parameters: base.parameters } : {}),
    deletionPolicy: pattern.snapshotDeletionPolicy === "Retain" ? "Retain" : "Delete",
  });
}

async function getSnapshot(namespace: TestNamespace, name: string): Promise<VolumeSnapshot> {
  return namespace.client.get<VolumeSnapshot>(GVR.volumeSnapshots, name, { namespace: namespace.name });
}

async function getContent(namespace: TestNamespace, name: string): Promise<VolumeSnapshotContent> {
  return namespace.client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, name);
}

/**
 * Waits (SnapshotCreate) until the snapshot is readyToUse, as upstream's WaitForSnapshotReady: an
 * error in its status may be transient (the controller retries a conflict), so it only names the
 * cause when the wait times out.
 */
export async function waitSnapshotReady(namespace: TestNamespace, name: string): Promise<VolumeSnapshot> {
  let last: string | undefined;
  try {
    return await namespace.waitFor(
      `VolumeSnapshot ${namespace.name}/${name} to be ready`,
      "SnapshotCreate",
      async () => {
        const snapshot = await getSnapshot(namespace, name);
        last = snapshot.status?.error?.message;
        return snapshot.status?.readyToUse === true ? snapshot : undefined;
      },
    );
  } catch (error) {
    if (last === undefined) throw error;
    throw new E2eCheckError(`VolumeSnapshot ${namespace.name}/${name} not ready; its last error: ${last}`);
  }
}

async function boundContent(
  namespace: TestNamespace,
  snapshot: VolumeSnapshot,
): Promise<VolumeSnapshotContent> {
  const name = snapshot.status?.boundVolumeSnapshotContentName;
  if (!name)
    throw new E2eCheckError(
      `VolumeSnapshot ${namespace.name}/${snapshot.metadata?.name} has no boundVolumeSnapshotContentName`,
    );
  return getContent(namespace, name);
}

/** A dynamic VolumeSnapshot of the claim, waited ready. */
async function dynamicSnapshot(
  namespace: TestNamespace,
  claimName: string,
  className: string,
): Promise<{ snapshot: VolumeSnapshot; content: VolumeSnapshotContent }> {
  const created = await namespace.client.create<VolumeSnapshot>(GVR.volumeSnapshots, {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: "VolumeSnapshot",
    metadata: { name: namespace.nextName("snapshot"), namespace: namespace.name },
    spec: { volumeSnapshotClassName: className, source: { persistentVolumeClaimName: claimName } },
  });
  const snapshot = await waitSnapshotReady(namespace, created.metadata?.name ?? "");
  return { snapshot, content: await boundContent(namespace, snapshot) };
}

async function setContentPolicy(
  namespace: TestNamespace,
  name: string,
  policy: DeletionPolicy,
): Promise<void> {
  await namespace.client.patch(GVR.volumeSnapshotContents, name, { spec: { deletionPolicy: policy } });
}

/**
 * The pattern's snapshot of the claim (upstream's CreateSnapshotResource): a dynamic snapshot;
 * for a pre-provisioned pattern that snapshot's content is set to Retain, the snapshot and
 * content deleted (the driver keeps the snapshot), and a content with its handle and the
 * pattern's deletion policy is made by hand, with a VolumeSnapshot bound to it.
 */
export async function createSnapshotResource(
  context: TestContext,
  claimName: string,
): Promise<SnapshotResource> {
  const { namespace, pattern } = context;
  const snapshotClass = await createSnapshotClass(context);
  const dynamic = await dynamicSnapshot(namespace, claimName, snapshotClass.metadata?.name ?? "");
  if (pattern.snapshotType !== "PreprovisionedSnapshot") return { snapshotClass, ...dynamic };

  const contentName = dynamic.content.metadata?.name ?? "";
  await setContentPolicy(namespace, contentName, "Retain");
  const handle = dynamic.content.status?.snapshotHandle;
  if (!handle) throw new E2eCheckError(`VolumeSnapshotContent ${contentName} has no status.snapshotHandle`);
  const annotations = Object.fromEntries(
    Object.entries(dynamic.content.metadata?.annotations ?? {}).filter(([key]) =>
      key.startsWith(DELETION_SECRET_PREFIX),
    ),
  );
  await namespace.deleteAndWait(GVR.volumeSnapshots, dynamic.snapshot.metadata?.name ?? "", namespace.name);
  await namespace.deleteAndWait(GVR.volumeSnapshotContents, contentName);

  const id = randomUUID();
  const snapshotName = `pre-provisioned-snapshot-${id}`;
  const content = await namespace.createObject<VolumeSnapshotContent>(GVR.volumeSnapshotContents, {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: "VolumeSnapshotContent",
    metadata: {
      name: `pre-provisioned-snapcontent-${id}`,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: {
      source: { snapshotHandle: handle },
      volumeSnapshotRef: { name: snapshotName, namespace: namespace.name },
      driver: dynamic.content.spec.driver,
      deletionPolicy: pattern.snapshotDeletionPolicy === "Retain" ? "Retain" : "Delete",
    },
  });
  await namespace.client.create<VolumeSnapshot>(GVR.volumeSnapshots, {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: "VolumeSnapshot",
    metadata: { name: snapshotName, namespace: namespace.name },
    spec: { source: { volumeSnapshotContentName: content.metadata?.name ?? "" } },
  });
  const snapshot = await waitSnapshotReady(namespace, snapshotName);
  return { snapshotClass, snapshot, content: await boundContent(namespace, snapshot) };
}

/**
 * The snapshot and its content agree (upstream's checkSnapshot, plus the status fields): ready,
 * with a restore size and a handle, the content bound to the snapshot and, unless it was
 * pre-provisioned, of the test's class. Returns the content.
 */
export async function checkSnapshot(
  namespace: TestNamespace,
  resource: SnapshotResource,
  pattern: TestPattern,
): Promise<VolumeSnapshotContent> {
  const name = resource.snapshot.metadata?.name ?? "";
  const snapshot = await getSnapshot(namespace, name);
  const where = `VolumeSnapshot ${namespace.name}/${name}`;
  if (snapshot.status?.readyToUse !== true) throw new E2eCheckError(`${where} is not readyToUse`);
  if (!snapshot.status.restoreSize) throw new E2eCheckError(`${where} has no status.restoreSize`);
  const content = await boundContent(namespace, snapshot);
  const contentName = content.metadata?.name ?? "";
  if (!content.status?.snapshotHandle)
    throw new E2eCheckError(`VolumeSnapshotContent ${contentName} has no status.snapshotHandle`);
  if (content.status.readyToUse !== true)
    throw new E2eCheckError(`VolumeSnapshotContent ${contentName} is not readyToUse`);
  const className = resource.snapshotClass.metadata?.name;
  if (pattern.snapshotType !== "PreprovisionedSnapshot" && content.spec.volumeSnapshotClassName !== className)
    throw new E2eCheckError(
      `VolumeSnapshotContent ${contentName} has class ${JSON.stringify(content.spec.volumeSnapshotClassName)}, want ${className}`,
    );
  const ref = content.spec.volumeSnapshotRef;
  if (ref.name !== name || ref.namespace !== namespace.name)
    throw new E2eCheckError(
      `VolumeSnapshotContent ${contentName} refers to ${ref.namespace}/${ref.name}, want ${namespace.name}/${name}`,
    );
  return content;
}

/** Deletes the snapshot without waiting (upstream deletes it together with what was restored from it). */
export async function deleteSnapshotNoWait(namespace: TestNamespace, name: string): Promise<void> {
  try {
    await namespace.client.delete(GVR.volumeSnapshots, name, { namespace: namespace.name });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** How long a Retain content must stay after its snapshot is gone (upstream watches 30 s). */
const RETAIN_WATCH_MS = 5_000;

/**
 * Waits until the snapshot is gone, then checks its content follows the deletion policy
 * (upstream's deleteVolumeSnapshot): deleted for Delete, still there for Retain.
 */
export async function checkSnapshotDeletion(
  namespace: TestNamespace,
  resource: SnapshotResource,
  content: VolumeSnapshotContent,
  policy: TestPattern["snapshotDeletionPolicy"],
): Promise<void> {
  const name = resource.snapshot.metadata?.name ?? "";
  await namespace.waitFor(
    `VolumeSnapshot ${namespace.name}/${name} to be deleted`,
    "SnapshotDelete",
    async () => {
      try {
        await getSnapshot(namespace, name);
        return false;
      } catch (error) {
        if (isNotFound(error)) return true;
        throw error;
      }
    },
  );
  const contentName = content.metadata?.name ?? "";
  const exists = async (): Promise<boolean> => {
    try {
      await getContent(namespace, contentName);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  };
  if (policy === "Delete") {
    await namespace.waitFor(
      `VolumeSnapshotContent ${contentName} to be deleted`,
      "SnapshotDelete",
      async () => !(await exists()),
    );
  } else if (policy === "Retain") {
    // Upstream's "stays for N seconds": polled briefly, not a correctness sleep.
    const until = Date.now() + RETAIN_WATCH_MS;
    while (Date.now() < until) {
      if (!(await exists()))
        throw new E2eCheckError(
          `VolumeSnapshotContent ${contentName} (Retain) was deleted with its snapshot`,
        );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/**
 * Deletes what the resource left (upstream's SnapshotResource.CleanupResource): a content not
 * of Delete policy is switched to Delete first so the driver's snapshot is deleted too.
 */
export async function cleanupSnapshotResource(
  namespace: TestNamespace,
  resource: SnapshotResource | undefined,
): Promise<void> {
  if (!resource) return;
  const contentNames = new Set([resource.content.metadata?.name ?? ""]);
  try {
    const snapshot = await getSnapshot(namespace, resource.snapshot.metadata?.name ?? "");
    const bound = snapshot.status?.boundVolumeSnapshotContentName;
    if (bound) contentNames.add(bound);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  for (const name of contentNames) {
    if (name === "") continue;
    try {
      const content = await getContent(namespace, name);
      if (content.spec.deletionPolicy !== "Delete") await setContentPolicy(namespace, name, "Delete");
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  await namespace.deleteAndWait(GVR.volumeSnapshots, resource.snapshot.metadata?.name ?? "", namespace.name);
  for (const name of contentNames)
    if (name !== "") await namespace.deleteAndWait(GVR.volumeSnapshotContents, name);
}

/**
 * Waits (PVDelete) until the node no longer lists the volume in status.volumesInUse: it was
 * unstaged, so its data is flushed before a snapshot is taken (upstream's step before snapshotting).
 */
export async function waitVolumeNotInUse(
  namespace: TestNamespace,
  nodeName: string,
  volumeHandle: string,
): Promise<void> {
  await namespace.waitFor(`node ${nodeName} to stop using volume ${volumeHandle}`, "PVDelete", async () => {
    const node = await namespace.client.get<Node>(GVR.nodes, nodeName);
    return !(node.status?.volumesInUse ?? []).some((inUse) => inUse.endsWith(volumeHandle));
  });
}
