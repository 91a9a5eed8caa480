// Checks of the driver's backend against the API: volumes and snapshots nothing refers to
// (leaks), and PersistentVolumes whose backend volume is gone.
//
// Rules (each fix is withheld when something may be about to claim the item):
// - orphan-volume: a ListVolumes entry no PersistentVolume of this driver names as its
//   volumeHandle. Fix: DeleteVolume. Withheld while a claim of this driver is still being
//   provisioned (Pending, or carrying csikit's in-flight finalizer): the provisioner creates the
//   volume before its PV, so the volume may be that claim's.
// - orphan-snapshot: a ListSnapshots entry no VolumeSnapshotContent of this driver names
//   (status.snapshotHandle or spec.source.snapshotHandle). Fix: DeleteSnapshot. Withheld while a
//   content of this driver has no handle yet (CreateSnapshot may be running), for a member of a
//   group snapshot (the group is deleted whole), and when the snapshot CRDs are not installed.
// - volume-missing: a PersistentVolume of this driver whose volumeHandle ListVolumes does not
//   return. Report-only: the data is gone or the driver lost it; deleting the PV (or restoring
//   the backend) is a decision about someone's data. A PV being deleted is left to the
//   finalizer checks, where a missing volume is what lets its provisioner finalizer go.

import { ANNOTATIONS, FINALIZERS, type PersistentVolumeClaim } from "../api/index.ts";
import { namedVolumeHandles } from "./named-volumes.ts";
import type { BackendState, ClusterState, Finding } from "./types.ts";

/** The snapshot handles the contents of `driver` name. */
export function snapshotHandlesOf(cluster: ClusterState, driver: string): Set<string> {
  const handles = new Set<string>();
  for (const content of cluster.volumeSnapshotContents ?? []) {
    if (content.spec.driver !== driver) continue;
    if (content.status?.snapshotHandle) handles.add(content.status.snapshotHandle);
    if (content.spec.source.snapshotHandle) handles.add(content.spec.source.snapshotHandle);
  }
  return handles;
}

function provisionerOf(claim: PersistentVolumeClaim): string | undefined {
  const annotations = claim.metadata.annotations ?? {};
  return (
    annotations[ANNOTATIONS.storageProvisioner.key] ?? annotations[ANNOTATIONS.betaStorageProvisioner.key]
  );
}

/** Claims of `driver` that may own a volume not yet saved as a PV. */
export function claimsInProvisioning(cluster: ClusterState, driver: string): PersistentVolumeClaim[] {
  return cluster.persistentVolumeClaims.filter(
    (claim) =>
      claim.metadata.finalizers?.includes(FINALIZERS.provisionerVolumeInFlight.key) ||
      (claim.status?.phase !== "Bound" && provisionerOf(claim) === driver && !claim.spec?.volumeName),
  );
}

function orphanVolumes(cluster: ClusterState, backend: BackendState): Finding[] {
  const { handles: named, complete, untranslatable } = namedVolumeHandles(cluster, backend.driverName);
  const provisioning = claimsInProvisioning(cluster, backend.driverName);
  const findings: Finding[] = [];
  for (const entry of backend.volumes ?? []) {
    const id = entry.volume?.volumeId;
    if (!id || named.has(id)) continue;
    const finding: Finding = {
      id: `orphan-volume/${id}`,
      kind: "orphan-volume",
      object: `backend volume ${id}`,
      why: `driver ${backend.driverName} lists it but no PersistentVolume names it as its volumeHandle`,
    };
    if (!complete) {
      finding.manual = `not deleted: the volume handle of ${untranslatable.join(", ")} (in-tree, migrated to this driver) cannot be worked out, so it may be this one`;
    } else if (provisioning.length > 0) {
      const names = provisioning.map((c) => `${c.metadata.namespace}/${c.metadata.name}`).join(", ");
      finding.manual = `not deleted while claims are being provisioned (${names}): it may be theirs; run doctor again once they are bound`;
    } else {
      finding.fix = { description: `DeleteVolume ${id}`, action: { type: "delete-volume", volumeId: id } };
    }
    findings.push(finding);
  }
  return findings;
}

function orphanSnapshots(cluster: ClusterState, backend: BackendState): Finding[] {
  const contents = cluster.volumeSnapshotContents;
  const named = snapshotHandlesOf(cluster, backend.driverName);
  const inProgress = (contents ?? []).filter(
    (c) => c.spec.driver === backend.driverName && !c.status?.snapshotHandle && !c.spec.source.snapshotHandle,
  );
  const findings: Finding[] = [];
  for (const snapshot of backend.snapshots ?? []) {
    const id = snapshot.snapshotId;
    if (!id || named.has(id)) continue;
    const finding: Finding = {
      id: `orphan-snapshot/${id}`,
      kind: "orphan-snapshot",
      object: `backend snapshot ${id}`,
      why: `driver ${backend.driverName} lists it (source volume ${snapshot.sourceVolumeId || "unknown"}) but no VolumeSnapshotContent names it`,
    };
    if (contents === undefined)
      finding.manual =
        "the snapshot CRDs are not installed, so nothing in this cluster can name it; delete it by hand if it is not used elsewhere";
    else if (snapshot.groupSnapshotId)
      finding.manual = `member of group snapshot ${snapshot.groupSnapshotId}: delete the group snapshot as a whole`;
    else if (inProgress.length > 0)
      finding.manual = `not deleted while contents are being created (${inProgress.map((c) => c.metadata.name).join(", ")}): it may be theirs`;
    else
      finding.fix = {
        description: `DeleteSnapshot ${id}`,
        action: { type: "delete-snapshot", snapshotId: id },
      };
    findings.push(finding);
  }
  return findings;
}

function missingVolumes(cluster: ClusterState, backend: BackendState): Finding[] {
  if (backend.volumes === undefined) return [];
  const listed = new Set(backend.volumes.map((entry) => entry.volume?.volumeId ?? ""));
  const findings: Finding[] = [];
  for (const pv of cluster.persistentVolumes) {
    const csi = pv.spec?.csi;
    if (csi?.driver !== backend.driverName || listed.has(csi.volumeHandle)) continue;
    if (pv.metadata.deletionTimestamp) continue;
    const claim = pv.spec?.claimRef;
    findings.push({
      id: `volume-missing/${pv.metadata.name}`,
      kind: "volume-missing",
      object: `PersistentVolume ${pv.metadata.name}`,
      why: `its backend volume ${csi.volumeHandle} is not in driver ${backend.driverName}'s ListVolumes${claim ? ` (bound to ${claim.namespace}/${claim.name})` : ""}`,
      manual:
        "the data is gone or the driver lost track of it: restore the backend volume, or once nothing needs the data delete the claim and the PV (doctor does not decide about data)",
    });
  }
  return findings;
}

export function checkBackend(cluster: ClusterState, backend: BackendState): Finding[] {
  return [
    ...orphanVolumes(cluster, backend),
    ...(backend.snapshots === undefined ? [] : orphanSnapshots(cluster, backend)),
    ...missingVolumes(cluster, backend),
  ];
}
