// What upstream's snapshot-conversion-webhook (external-snapshotter v8.4+) does for
// groupsnapshot.storage.k8s.io, served in process by the embedded API server (crd-conversion.ts).
// v1 and v1beta2 have one schema: only apiVersion changes. v1beta1 differs on
// VolumeGroupSnapshotContent status: its member list is volumeSnapshotHandlePairList
// ({volumeHandle, snapshotHandle}) where v1beta2/v1 have volumeSnapshotInfoList (plus
// creationTime, readyToUse, restoreSize per member). Going to v1beta1 the full list is kept in
// the annotation groupsnapshot.storage.kubernetes.io/volume-snapshot-info-list (Go's JSON of
// it) so the way back restores it, as upstream; without the annotation the pairs are renamed.
// Beyond upstream's webhook: status.creationTime is int64 nanoseconds in v1beta1 and a
// date-time in v1beta2/v1, and is converted too (upstream passes it through unchanged, which a
// v1beta1 client cannot decode); a round trip keeps whole seconds, as metav1.Time does.
// VolumeGroupSnapshot and VolumeGroupSnapshotClass have the same fields in every version.

import type { KubeObject } from "../rest/resource.ts";
import { isRecord } from "./common.ts";

export const VOLUME_SNAPSHOT_INFO_ANNOTATION =
  "groupsnapshot.storage.kubernetes.io/volume-snapshot-info-list";

const GROUP = "groupsnapshot.storage.k8s.io";
const VERSIONS = new Set([`${GROUP}/v1`, `${GROUP}/v1beta2`, `${GROUP}/v1beta1`]);
const KINDS = new Set(["VolumeGroupSnapshot", "VolumeGroupSnapshotClass", "VolumeGroupSnapshotContent"]);
const BETA1 = `${GROUP}/v1beta1`;

type Obj = Record<string, unknown>;

/** Go's encoding/json of a decoded JSON value: object keys sorted, no spaces. */
function goJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(goJson).join(",")}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${goJson(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function annotationsOf(object: Obj): Record<string, string> {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  return isRecord(metadata.annotations) ? { ...(metadata.annotations as Record<string, string>) } : {};
}

function setAnnotations(object: Obj, annotations: Record<string, string>): void {
  const metadata: Obj = isRecord(object.metadata) ? { ...object.metadata } : {};
  if (Object.keys(annotations).length === 0) delete metadata.annotations;
  else metadata.annotations = annotations;
  object.metadata = metadata;
}

function toBeta1(object: Obj): void {
  const status = isRecord(object.status) ? { ...object.status } : undefined;
  if (status === undefined) return;
  const infos = status.volumeSnapshotInfoList;
  if (Array.isArray(infos)) {
    const annotations = annotationsOf(object);
    annotations[VOLUME_SNAPSHOT_INFO_ANNOTATION] = goJson(infos);
    setAnnotations(object, annotations);
    status.volumeSnapshotHandlePairList = infos.map((entry) => {
      if (!isRecord(entry))
        throw new Error("unexpected content in .status.volumeSnapshotInfoList: expected map");
      const { creationTime: _c, readyToUse: _r, restoreSize: _s, ...pair } = entry;
      return pair;
    });
    delete status.volumeSnapshotInfoList;
  }
  if (typeof status.creationTime === "string") {
    const ms = Date.parse(status.creationTime);
    if (!Number.isNaN(ms)) status.creationTime = ms * 1_000_000;
  }
  object.status = status;
}

function fromBeta1(object: Obj): void {
  const annotations = annotationsOf(object);
  const saved = annotations[VOLUME_SNAPSHOT_INFO_ANNOTATION];
  const status = isRecord(object.status) ? { ...object.status } : undefined;
  if (saved !== undefined) {
    let list: unknown;
    try {
      list = JSON.parse(saved);
    } catch (error) {
      throw new Error(
        `unable to deserialize annotation "${VOLUME_SNAPSHOT_INFO_ANNOTATION}": ${(error as Error).message}`,
      );
    }
    if (!Array.isArray(list))
      throw new Error("error while setting .status.volumeSnapshotInfoList: not a list");
    const next = status ?? {};
    next.volumeSnapshotInfoList = list;
    delete next.volumeSnapshotHandlePairList;
    object.status = next;
    delete annotations[VOLUME_SNAPSHOT_INFO_ANNOTATION];
    setAnnotations(object, annotations);
  } else if (status !== undefined && Array.isArray(status.volumeSnapshotHandlePairList)) {
    status.volumeSnapshotInfoList = status.volumeSnapshotHandlePairList;
    delete status.volumeSnapshotHandlePairList;
    object.status = status;
  }
  const current = isRecord(object.status) ? object.status : undefined;
  if (current !== undefined && typeof current.creationTime === "number") {
    object.status = {
      ...current,
      creationTime: new Date(Math.floor(current.creationTime / 1_000_000_000) * 1000)
        .toISOString()
        .replace(/\.\d+Z$/, "Z"),
    };
  }
}

/** Converts a groupsnapshot.storage.k8s.io object from apiVersion `from` to `to` (upstream's webhook, see header). */
export function convertGroupSnapshot(object: KubeObject, from: string, to: string): KubeObject {
  if (!VERSIONS.has(from)) throw new Error(`unexpected conversion version "${from}"`);
  if (!VERSIONS.has(to)) throw new Error(`unexpected conversion version "${to}"`);
  const kind = typeof object.kind === "string" ? object.kind : "";
  if (kind !== "" && !KINDS.has(kind)) throw new Error(`unexpected conversion kind "${kind}"`);
  const out = structuredClone(object) as Obj;
  if (from === to || kind !== "VolumeGroupSnapshotContent") return out;
  if (to === BETA1 && from !== BETA1) toBeta1(out);
  else if (from === BETA1 && to !== BETA1) fromBeta1(out);
  return out;
}
