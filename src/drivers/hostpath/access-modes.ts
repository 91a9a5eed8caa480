// What a CSI access mode allows NodePublishVolume to do on one node, as CSI v1.12 words it
// (VolumeCapability.AccessMode and the NodePublishVolume tables for a plugin with the
// SINGLE_NODE_MULTI_WRITER capability, which this driver has):
//
// | mode                                         | another target path on this node | mount  |
// |----------------------------------------------|----------------------------------|--------|
// | SINGLE_NODE_WRITER, SINGLE_NODE_SINGLE_WRITER | FAILED_PRECONDITION              | as asked |
// | SINGLE_NODE_READER_ONLY                      | FAILED_PRECONDITION              | read-only |
// | SINGLE_NODE_MULTI_WRITER                     | allowed                          | as asked |
// | MULTI_NODE_READER_ONLY                       | allowed                          | read-only |
// | MULTI_NODE_SINGLE_WRITER, MULTI_NODE_MULTI_WRITER | allowed                     | as asked |
//
// The same target path again is the idempotency rule, not this one (same arguments: OK;
// other readonly flag: ALREADY_EXISTS). Reader-only modes are mounted read-only even when the
// CO's readonly flag is false, rather than refused: the kubelet sends readonly=false for a
// ReadOnlyMany claim a pod mounts without `readOnly: true`, and refusing would stop such pods,
// while a read-only mount is exactly what the mode promises.

import type { VolumeCapability_AccessMode_Mode } from "../../csi/index.ts";

type Mode = VolumeCapability_AccessMode_Mode;

/** Modes under which a volume may be published at one target path per node only. */
const ONE_TARGET: ReadonlySet<Mode> = new Set([
  "SINGLE_NODE_WRITER",
  "SINGLE_NODE_SINGLE_WRITER",
  "SINGLE_NODE_READER_ONLY",
]);

/** Modes whose every publish is read-only. */
const READER_ONLY: ReadonlySet<Mode> = new Set(["SINGLE_NODE_READER_ONLY", "MULTI_NODE_READER_ONLY"]);

/** True when a volume published in `mode` may be at no other target path on this node. */
export function publishesAtOneTarget(mode: Mode): boolean {
  return ONE_TARGET.has(mode);
}

/** Whether the publish mounts read-only: when asked, and always for a reader-only mode. */
export function mountsReadOnly(mode: Mode, readonly: boolean): boolean {
  return readonly || READER_ONLY.has(mode);
}
