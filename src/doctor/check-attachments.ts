// VolumeAttachments to nodes that no longer exist. Upstream's attach/detach controller detaches
// what a deleted node had attached (after its maxWaitForUnmount, since no kubelet is left to
// unmount): it deletes the VolumeAttachment and leaves ControllerUnpublishVolume to the
// attacher, whose finalizer keeps the object until the backend let go. The fix does the same:
// delete the VolumeAttachment. One already being deleted is the finalizer checks' business.

import { refOf, describeRef } from "./refs.ts";
import type { ClusterState, Finding } from "./types.ts";

export function checkAttachments(cluster: ClusterState): Finding[] {
  const nodes = new Set(cluster.nodes.map((node) => node.metadata.name));
  const findings: Finding[] = [];
  for (const va of cluster.volumeAttachments) {
    if (nodes.has(va.spec.nodeName) || va.metadata.deletionTimestamp) continue;
    const ref = refOf("VolumeAttachment", va);
    const source = va.spec.source.persistentVolumeName ?? "an inline volume";
    findings.push({
      id: `attachment-to-deleted-node/${ref.name}`,
      kind: "attachment-to-deleted-node",
      object: describeRef(ref),
      why: `attaches ${source} (driver ${va.spec.attacher}) to node ${va.spec.nodeName}, which no longer exists`,
      fix: {
        description: `delete ${describeRef(ref)} (the attacher then calls ControllerUnpublishVolume), as the attach/detach controller detaches from a deleted node`,
        action: { type: "delete-object", target: ref },
      },
    });
  }
  return findings;
}
