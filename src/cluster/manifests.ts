// Applies manifests (deploy/rbac/*.yaml, the CSIDriver and StorageClass of `up`) to the API
// server as create-or-replace, so a second `up` on the same state dir converges them instead
// of failing on AlreadyExists, and a manifest edited between two runs takes effect.

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { isRecord, CsikitError } from "../base/index.ts";
import { isAlreadyExists, type KubeClient } from "../kube/index.ts";

/** deploy/rbac/ of this checkout: the RBAC every identity of `up` is bound by. */
export const RBAC_DIR = fileURLToPath(new URL("../../deploy/rbac/", import.meta.url));

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** Lower-case plural resource of the kinds `up` applies (no discovery needed for these). */
const RESOURCES: Record<string, string> = {
  ServiceAccount: "serviceaccounts",
  ClusterRole: "clusterroles",
  ClusterRoleBinding: "clusterrolebindings",
  Role: "roles",
  RoleBinding: "rolebindings",
  CSIDriver: "csidrivers",
  StorageClass: "storageclasses",
  Namespace: "namespaces",
  CustomResourceDefinition: "customresourcedefinitions",
  VolumeSnapshotClass: "volumesnapshotclasses",
  VolumeGroupSnapshotClass: "volumegroupsnapshotclasses",
};

/** Every object of the YAML files in `dir` (file order, then document order). */
export async function readManifests(dir: string): Promise<Manifest[]> {
  const files = (await readdir(dir)).filter((name) => name.endsWith(".yaml")).sort();
  const manifests: Manifest[] = [];
  for (const file of files) {
    for (const document of parseAllDocuments(await readFile(join(dir, file), "utf8"))) {
      if (document.errors.length > 0)
        throw new CsikitError(
          "CSIKIT_ERR_MANIFEST",
          `${join(dir, file)}: ${document.errors.map((e) => e.message).join("; ")}`,
        );
      const value: unknown = document.toJS();
      if (value === null || value === undefined) continue;
      if (
        !isRecord(value) ||
        typeof value.apiVersion !== "string" ||
        typeof value.kind !== "string" ||
        !isRecord(value.metadata) ||
        typeof value.metadata.name !== "string"
      )
        throw new CsikitError(
          "CSIKIT_ERR_MANIFEST",
          `${join(dir, file)}: a document without apiVersion, kind or metadata.name`,
        );
      manifests.push({
        ...value,
        apiVersion: value.apiVersion,
        kind: value.kind,
        metadata: {
          ...value.metadata,
          name: value.metadata.name,
          ...(typeof value.metadata.namespace === "string" ? { namespace: value.metadata.namespace } : {}),
        },
      });
    }
  }
  return manifests;
}

/**
 * Creates each manifest, or replaces the object's content when it exists (the embedded API
 * server has no server-side apply): a PUT of the manifest with the live resourceVersion, as
 * `kubectl replace` does. ServiceAccounts that exist are left as they are (their uid is what
 * the tokens are bound to).
 */
export async function applyManifests(
  client: KubeClient,
  manifests: readonly Manifest[],
  signal?: AbortSignal,
): Promise<void> {
  for (const manifest of manifests) {
    const resource = RESOURCES[manifest.kind];
    if (!resource)
      throw new CsikitError(
        "CSIKIT_ERR_MANIFEST",
        `cannot apply kind ${manifest.kind} (${manifest.metadata.name})`,
      );
    const slash = manifest.apiVersion.indexOf("/");
    const gvr = {
      group: slash < 0 ? "" : manifest.apiVersion.slice(0, slash),
      version: slash < 0 ? manifest.apiVersion : manifest.apiVersion.slice(slash + 1),
      resource,
    };
    const where = manifest.metadata.namespace ? { namespace: manifest.metadata.namespace } : {};
    try {
      await client.create(gvr, manifest, signal);
      continue;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    if (manifest.kind === "ServiceAccount") continue;
    const live = await client.get(gvr, manifest.metadata.name, where, signal);
    await client.update(
      gvr,
      {
        ...manifest,
        metadata: { ...manifest.metadata, resourceVersion: live.metadata?.resourceVersion ?? "" },
      },
      {},
      signal,
    );
  }
}

/** The ServiceAccounts the manifests define, as namespace/name. */
export function serviceAccountsOf(manifests: readonly Manifest[]): { namespace: string; name: string }[] {
  return manifests
    .filter((m) => m.kind === "ServiceAccount")
    .map((m) => ({ namespace: m.metadata.namespace ?? "default", name: m.metadata.name }));
}
