// A StatefulSet's history, pure: the ControllerRevision that records its pod template (data is
// upstream's patch `{"spec":{"template":{…,"$patch":"replace"}}}`), its name "<set>-<hash>"
// and the controller.kubernetes.io/hash label (FNV-32a of the data's JSON plus the collision
// count, encoded as upstream's rand.SafeEncodeString), equality of two revisions, their order,
// and the set a revision restores. The JSON is canonical (keys sorted), so one template always
// hashes to one name whatever order the server returned its fields in.

import type { ControllerRevision, StatefulSet } from "../../api/index.ts";
import { controllerRef } from "../common/index.ts";
import { STATEFULSET_LABELS } from "./identity.ts";

/** JSON with object keys sorted at every level, as Go's encoding of a map prints them. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

const SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789";

/** Upstream's rand.SafeEncodeString: no vowels, no look-alike digits, so no words. */
export function safeEncodeString(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) out += SAFE_ALPHANUMS[text.charCodeAt(i) % SAFE_ALPHANUMS.length];
  return out;
}

/** The revision data of a set: a patch that puts its pod template back. */
export function revisionData(set: StatefulSet): Record<string, unknown> {
  return { spec: { template: { ...structuredClone(set.spec?.template ?? {}), $patch: "replace" } } };
}

export function revisionHash(data: unknown, collisionCount: number | undefined): string {
  const text = canonicalJson(data) + (collisionCount !== undefined ? String(collisionCount) : "");
  return safeEncodeString(String(fnv32a(text)));
}

export function revisionName(setName: string, hash: string): string {
  return `${setName.length > 223 ? setName.slice(0, 223) : setName}-${hash}`;
}

/** The revision `revision` of `set` (named for `collisionCount`). */
export function newRevision(set: StatefulSet, revision: number, collisionCount: number): ControllerRevision {
  const data = revisionData(set);
  const hash = revisionHash(data, collisionCount);
  return {
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: {
      name: revisionName(set.metadata.name ?? "", hash),
      namespace: set.metadata.namespace ?? "",
      labels: { ...(set.spec?.template?.metadata?.labels ?? {}), [STATEFULSET_LABELS.revisionHash]: hash },
      ...(set.metadata.annotations ? { annotations: { ...set.metadata.annotations } } : {}),
      ownerReferences: [controllerRef(set, "StatefulSet", "apps/v1")],
    },
    data,
    revision,
  };
}

export function equalRevision(a: ControllerRevision, b: ControllerRevision): boolean {
  return canonicalJson(a.data ?? null) === canonicalJson(b.data ?? null);
}

/** Ascending by revision, then creation time, then name (upstream's SortControllerRevisions). */
export function sortRevisions(revisions: readonly ControllerRevision[]): ControllerRevision[] {
  return [...revisions].sort((a, b) => {
    if (a.revision !== b.revision) return a.revision - b.revision;
    const at = a.metadata.creationTimestamp ?? "";
    const bt = b.metadata.creationTimestamp ?? "";
    if (at !== bt) return at < bt ? -1 : 1;
    return (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
  });
}

/** The set with the revision's template in place of its own (upstream's ApplyRevision). */
export function applyRevision(set: StatefulSet, revision: ControllerRevision): StatefulSet {
  const copy = structuredClone(set);
  const data = revision.data as { spec?: { template?: Record<string, unknown> } } | undefined;
  const template = structuredClone(data?.spec?.template ?? {});
  delete template.$patch;
  if (copy.spec) copy.spec.template = template;
  return copy;
}

export function nextRevisionNumber(sorted: readonly ControllerRevision[]): number {
  return sorted.length === 0 ? 1 : (sorted[sorted.length - 1]?.revision ?? 0) + 1;
}
