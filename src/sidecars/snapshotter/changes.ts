// Which content updates are worth a sync (upstream's ShouldEnqueueContentChange): everything
// except the sidecar's own traces — resourceVersion, status, managedFields, finalizers and the
// being-created annotation. Without this filter every status write would wake the content at
// once and readiness polling would run at the speed of the sidecar's own writes instead of its
// doubling delay.

import { jsonEqual } from "../../base/index.ts";
import type { VolumeSnapshotContent } from "../../api/index.ts";
import { ANNOTATION } from "./names.ts";

const SIDECAR_ANNOTATIONS: readonly string[] = [ANNOTATION.beingCreated];

function sanitized(content: VolumeSnapshotContent): unknown {
  const {
    resourceVersion: _rv,
    managedFields: _mf,
    finalizers: _f,
    annotations,
    ...metadata
  } = content.metadata;
  const kept = { ...annotations };
  for (const key of SIDECAR_ANNOTATIONS) delete kept[key];
  return { ...content, status: undefined, metadata: { ...metadata, annotations: kept } };
}

export function contentChangeMatters(old: VolumeSnapshotContent, content: VolumeSnapshotContent): boolean {
  return !jsonEqual(sanitized(old), sanitized(content));
}
