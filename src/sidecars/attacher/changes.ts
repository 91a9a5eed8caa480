// Which VolumeAttachment updates are worth a sync (external-attacher's shouldEnqueueVAChange):
// an update that differs from the cached object only in status.attachError/detachError is the
// attacher's own failure report coming back through the watch; syncing on it would call the
// driver again at once and defeat the per-item backoff. Everything else (a periodic resync
// with the same resourceVersion included) is synced.

import { isDeepStrictEqual } from "node:util";
import type { VolumeAttachment } from "../../api/index.ts";

function withoutErrors(va: VolumeAttachment): unknown {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = va.metadata;
  const { attachError: _ae, detachError: _de, ...status } = va.status ?? { attached: false };
  return { ...va, metadata, status };
}

export function attachmentChangeMatters(old: VolumeAttachment, current: VolumeAttachment): boolean {
  if (old.metadata.resourceVersion === current.metadata.resourceVersion) return true;
  const noErrors = (va: VolumeAttachment): boolean => !va.status?.attachError && !va.status?.detachError;
  if (noErrors(old) && noErrors(current)) return true;
  return !isDeepStrictEqual(withoutErrors(old), withoutErrors(current));
}
