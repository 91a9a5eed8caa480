// Mounts and loop devices under a node's kubelet root that nothing owns any more, by the
// kubelet's path layout (FACTS.md "Kubelet paths"):
//   pods/<podUID>/...                                          owner: the pod with that UID
//   plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<podUID>  owner: the pod with that UID
//   plugins/kubernetes.io/csi/volumeDevices/staging/<pv>       owner: the PersistentVolume <pv>
//   plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount
//                                                  owner: a PV of <driver> with that handle
// A pod, in any namespace on any node, keeps its paths; so does a PV. Anything else under the
// root is left alone. A mount's fix is unmount (deepest first, so nested mounts come off in
// order); a loop device whose backing file lies under such a path, or was deleted there, is
// detached. Mounts seen are those of doctor's mount namespace: run it where the node agent runs.

import { createHash } from "node:crypto";
import { relative, sep } from "node:path";
import type { ClusterState, Finding, NodeRootState } from "./types.ts";

const DELETED_SUFFIX = " (deleted)";

/** Who must exist for a path under a node root to be owned, or undefined for paths not judged. */
type Owner =
  | { kind: "pod"; uid: string }
  | { kind: "pv"; name: string }
  | { kind: "staging"; driver: string; sha: string };

export function ownerOfPath(root: string, path: string): Owner | undefined {
  const rel = relative(root, path);
  if (rel === "" || rel.startsWith("..")) return undefined;
  const parts = rel.split(sep);
  if (parts[0] === "pods" && parts.length >= 3 && parts[1]) return { kind: "pod", uid: parts[1] };
  if (parts[0] !== "plugins" || parts[1] !== "kubernetes.io" || parts[2] !== "csi") return undefined;
  if (parts[3] === "volumeDevices") {
    if (parts[4] === "publish" && parts.length >= 7 && parts[6]) return { kind: "pod", uid: parts[6] };
    if (parts[4] === "staging" && parts.length >= 6 && parts[5]) return { kind: "pv", name: parts[5] };
    return undefined;
  }
  if (parts.length >= 6 && parts[3] && parts[4] && parts[5] === "globalmount")
    return { kind: "staging", driver: parts[3], sha: parts[4] };
  return undefined;
}

/** Why nothing owns `owner`, or undefined when something does. */
function ownerMissing(owner: Owner, cluster: ClusterState): string | undefined {
  switch (owner.kind) {
    case "pod":
      return cluster.pods.some((pod) => pod.metadata.uid === owner.uid)
        ? undefined
        : `no pod has UID ${owner.uid}`;
    case "pv":
      return cluster.persistentVolumes.some((pv) => pv.metadata.name === owner.name)
        ? undefined
        : `PersistentVolume ${owner.name} does not exist`;
    case "staging": {
      const owned = cluster.persistentVolumes.some((pv) => {
        const csi = pv.spec?.csi;
        return (
          csi?.driver === owner.driver &&
          createHash("sha256").update(csi.volumeHandle).digest("hex") === owner.sha
        );
      });
      return owned
        ? undefined
        : `no PersistentVolume of driver ${owner.driver} has a volumeHandle hashing to ${owner.sha}`;
    }
  }
}

function orphanMounts(state: NodeRootState, cluster: ClusterState): Finding[] {
  const findings: Finding[] = [];
  const seen = new Set<string>();
  for (const mount of state.mounts) {
    if (seen.has(mount.mountPoint)) continue;
    seen.add(mount.mountPoint);
    const owner = ownerOfPath(state.root, mount.mountPoint);
    const missing = owner && ownerMissing(owner, cluster);
    if (!missing) continue;
    findings.push({
      id: `orphan-mount/${mount.mountPoint}`,
      kind: "orphan-mount",
      object: `mount ${mount.mountPoint}`,
      why: `${mount.fsType} mount of ${mount.source} under node root ${state.root}, and ${missing}`,
      fix: {
        description: `unmount ${mount.mountPoint}`,
        action: { type: "unmount", path: mount.mountPoint },
      },
    });
  }
  // Deepest first: a mount nested in another must come off before its parent can.
  return findings.sort((a, b) => b.object.split("/").length - a.object.split("/").length);
}

function orphanLoops(state: NodeRootState, cluster: ClusterState): Finding[] {
  const findings: Finding[] = [];
  for (const loop of state.loops) {
    const deleted = loop.backingFile.endsWith(DELETED_SUFFIX);
    const file = deleted ? loop.backingFile.slice(0, -DELETED_SUFFIX.length) : loop.backingFile;
    const rel = relative(state.root, file);
    if (rel === "" || rel.startsWith("..")) continue;
    const owner = ownerOfPath(state.root, file);
    const missing = deleted ? "its backing file was deleted" : owner && ownerMissing(owner, cluster);
    if (!missing) continue;
    findings.push({
      id: `orphan-loop-device/${loop.device}`,
      kind: "orphan-loop-device",
      object: `loop device ${loop.device}`,
      why: `backed by ${file} under node root ${state.root}, and ${missing}`,
      fix: {
        description: `detach ${loop.device} (losetup -d)`,
        action: { type: "detach-loop", device: loop.device, backingFile: loop.backingFile },
      },
    });
  }
  return findings;
}

export function checkNodeRoot(state: NodeRootState, cluster: ClusterState): Finding[] {
  return [...orphanMounts(state, cluster), ...orphanLoops(state, cluster)];
}
