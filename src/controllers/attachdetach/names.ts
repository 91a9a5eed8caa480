// Names the attach/detach controller shares with the attacher and the kubelet (FACTS.md), and
// its upstream event messages. Pure.

import { createHash } from "node:crypto";

/** `csi-` + hex(sha256(volumeHandle + driverName + nodeName)), plain concatenation. */
export function volumeAttachmentName(volumeHandle: string, driverName: string, nodeName: string): string {
  return (
    "csi-" +
    createHash("sha256")
      .update(volumeHandle + driverName + nodeName)
      .digest("hex")
  );
}

/** The unique volume name in node status: `kubernetes.io/csi/<driver>^<volumeHandle>`. */
export function uniqueVolumeName(driverName: string, volumeHandle: string): string {
  return `kubernetes.io/csi/${driverName}^${volumeHandle}`;
}

/** Upstream's VolumeToAttach.GenerateMsg: `<prefix> for volume "<spec name>" <suffix>`. */
export function attachMessage(prefix: string, volumeSpecName: string, error?: string): string {
  return `${prefix} for volume ${JSON.stringify(volumeSpecName)} ${error === undefined ? "" : `: ${error}`}`;
}
