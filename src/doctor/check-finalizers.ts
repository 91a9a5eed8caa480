// Finalizers held past their owner's life, on objects whose deletion has waited at least
// --min-age. Each rule names the finalizer's owner — what its controller waits for — and the fix
// (removing the finalizer, as its controller would) is proposed only when that owner is gone:
//
// PersistentVolumeClaim
//   kubernetes.io/pvc-protection: no pod that has not ended uses the claim (by claimName or as
//     a generic ephemeral volume).
//   snapshot.storage.kubernetes.io/pvc-as-source-protection: no VolumeSnapshot of the claim is
//     still being taken (readyToUse not true), or the snapshot CRDs are not installed.
//   provisioner.storage.kubernetes.io/cloning-protection: no Pending claim clones it.
//   provisioner.csikit.io/volume-in-flight: report-only. Only csikit's provisioner knows whether
//     a CreateVolume made a volume; removing the mark by hand may leak one.
// PersistentVolume
//   kubernetes.io/pv-protection: no claim is bound to it (claimRef empty, or that claim is gone
//     or has another uid).
//   external-provisioner.volume.kubernetes.io/finalizer: reclaimPolicy Retain (the provisioner
//     drops it then too), or the backend volume is confirmed gone (ListVolumes of the PV's driver
//     does not return it). Otherwise DeleteVolume has not happened: report-only.
//   external-attacher/<driver>: no VolumeAttachment names the PV.
// VolumeSnapshot
//   snapshot.storage.kubernetes.io/volumesnapshot-bound-protection: its content is gone, is not
//     bound back to it, or has deletionPolicy Retain.
//   snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection and
//   provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection: no Pending claim
//     restores from it.
//   snapshot.storage.kubernetes.io/volumesnapshot-in-group-protection: its group snapshot is gone.
// VolumeSnapshotContent
//   snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection: its VolumeSnapshot is
//     gone, and either deletionPolicy is Retain or the backend snapshot is confirmed gone.
// VolumeAttachment
//   external-attacher/<driver>: (being deleted) the backend confirms the volume is not published
//     to the node any more: the volume is not listed, or ListVolumes' published_node_ids lacks the
//     node ID. Otherwise ControllerUnpublish has not happened: report-only.
// Finalizers doctor does not know are left alone.

import {
  ANNOTATIONS,
  FINALIZERS,
  attacherFinalizer,
  type KubeResource,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeAttachment,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../api/index.ts";
import {
  deletionAge,
  describeRef,
  formatAge,
  pendingClaimsFromSource,
  podsUsingClaim,
  refOf,
} from "./refs.ts";
import type { BackendState, DoctorInputs, Finding } from "./types.ts";

/** Whether an owner is gone (fix proposed) or still there (report-only), and why. */
type Verdict = { gone: true; why: string } | { gone: false; why: string; manual: string };

function finding(
  inputs: DoctorInputs,
  kind: string,
  object: KubeResource,
  finalizer: string,
  verdict: Verdict,
): Finding {
  const ref = refOf(kind, object);
  const age = formatAge(deletionAge(object, inputs.now) ?? 0);
  const base = {
    id: `stuck-finalizer/${kind}/${ref.namespace ?? ""}/${ref.name}/${finalizer}`,
    kind: "stuck-finalizer" as const,
    object: describeRef(ref),
    why: `deleted ${age} ago, still held by ${finalizer}: ${verdict.why}`,
  };
  if (!verdict.gone) return { ...base, manual: verdict.manual };
  return {
    ...base,
    fix: {
      description: `remove finalizer ${finalizer} from ${describeRef(ref)}`,
      action: { type: "remove-finalizer", target: ref, finalizer },
    },
  };
}

/** Each finalizer of a stuck object with its verdict (undefined verdict: not doctor's). */
function judge<T extends KubeResource>(
  inputs: DoctorInputs,
  kind: string,
  objects: readonly T[] | undefined,
  verdictOf: (object: T, finalizer: string) => Verdict | undefined,
): Finding[] {
  const findings: Finding[] = [];
  for (const object of objects ?? []) {
    const age = deletionAge(object, inputs.now);
    if (age === undefined || age < inputs.minAgeMs) continue;
    for (const finalizer of object.metadata.finalizers ?? []) {
      const verdict = verdictOf(object, finalizer);
      if (verdict) findings.push(finding(inputs, kind, object, finalizer, verdict));
    }
  }
  return findings;
}

function claimVerdict(
  inputs: DoctorInputs,
  claim: PersistentVolumeClaim,
  finalizer: string,
): Verdict | undefined {
  const { cluster } = inputs;
  const namespace = claim.metadata.namespace;
  const name = claim.metadata.name ?? "";
  switch (finalizer) {
    case FINALIZERS.pvcProtection.key: {
      const users = podsUsingClaim(cluster.pods, claim);
      if (users.length === 0) return { gone: true, why: "no pod uses the claim" };
      return {
        gone: false,
        why: `in use by pod ${users.map((p) => p.metadata.name).join(", ")}`,
        manual: "delete the pods that use it; the protection controller then lets it go",
      };
    }
    case FINALIZERS.pvcAsSource.key: {
      if (cluster.volumeSnapshots === undefined)
        return { gone: true, why: "the snapshot CRDs are not installed: no snapshot can be taken of it" };
      const taking = cluster.volumeSnapshots.filter(
        (s) =>
          s.metadata.namespace === namespace &&
          s.spec.source.persistentVolumeClaimName === name &&
          s.status?.readyToUse !== true,
      );
      if (taking.length === 0) return { gone: true, why: "no snapshot of it is being taken" };
      return {
        gone: false,
        why: `snapshots being taken: ${taking.map((s) => s.metadata.name).join(", ")}`,
        manual:
          "wait for the snapshots to be ready (is the snapshot-controller and the snapshotter running?)",
      };
    }
    case FINALIZERS.cloningProtection.key: {
      const clones = pendingClaimsFromSource(cluster.persistentVolumeClaims, {
        namespace,
        kind: "PersistentVolumeClaim",
        name,
      });
      if (clones.length === 0) return { gone: true, why: "no claim is being cloned from it" };
      return {
        gone: false,
        why: `claims being cloned from it: ${clones.map((c) => c.metadata.name).join(", ")}`,
        manual: "wait for the clones to be provisioned (is the provisioner running?)",
      };
    }
    case FINALIZERS.provisionerVolumeInFlight.key:
      return {
        gone: false,
        why: "csikit's provisioner may have created a volume for it that no PV records yet",
        manual:
          "run csikit's provisioner for the claim's driver: it settles the CreateVolume (deleting what it made) and removes the mark. Removing it by hand may leak a backend volume (doctor with --csi-address lists leaks)",
      };
    default:
      return undefined;
  }
}

/** Whether the backend confirms volume `handle` of `driver` is gone (undefined: cannot tell). */
function backendVolumeGone(
  backend: BackendState | undefined,
  driver: string,
  handle: string,
): boolean | undefined {
  if (backend?.driverName !== driver || backend.volumes === undefined) return undefined;
  return !backend.volumes.some((entry) => entry.volume?.volumeId === handle);
}

function volumeVerdict(inputs: DoctorInputs, pv: PersistentVolume, finalizer: string): Verdict | undefined {
  const { cluster, backend } = inputs;
  const csi = pv.spec?.csi;
  if (finalizer === FINALIZERS.pvProtection.key) {
    const ref = pv.spec?.claimRef;
    const claim =
      ref &&
      cluster.persistentVolumeClaims.find(
        (c) =>
          c.metadata.namespace === ref.namespace &&
          c.metadata.name === ref.name &&
          (!ref.uid || c.metadata.uid === ref.uid),
      );
    if (!claim)
      return {
        gone: true,
        why: ref ? `its claim ${ref.namespace}/${ref.name} is gone` : "no claim is bound to it",
      };
    return {
      gone: false,
      why: `still bound to claim ${ref.namespace}/${ref.name}`,
      manual: "delete the claim first (kubectl delete pvc)",
    };
  }
  if (finalizer === FINALIZERS.provisionerDeletion.key) {
    if (pv.spec?.persistentVolumeReclaimPolicy === "Retain")
      return { gone: true, why: "reclaimPolicy is Retain: no DeleteVolume is owed" };
    if (!csi) return undefined;
    const gone = backendVolumeGone(backend, csi.driver, csi.volumeHandle);
    if (gone)
      return { gone: true, why: `its backend volume ${csi.volumeHandle} is gone (not in ListVolumes)` };
    return {
      gone: false,
      why:
        gone === false
          ? `its backend volume ${csi.volumeHandle} still exists: DeleteVolume has not happened`
          : `cannot tell whether backend volume ${csi.volumeHandle} is gone (give --csi-address of driver ${csi.driver})`,
      manual: `run the provisioner of driver ${csi.driver}: it calls DeleteVolume, then removes the finalizer`,
    };
  }
  if (csi && finalizer === attacherFinalizer(csi.driver)) {
    const attachments = cluster.volumeAttachments.filter(
      (va) => va.spec.source.persistentVolumeName === pv.metadata.name,
    );
    if (attachments.length === 0) return { gone: true, why: "no VolumeAttachment names it" };
    return {
      gone: false,
      why: `VolumeAttachments still name it: ${attachments.map((va) => va.metadata.name).join(", ")}`,
      manual: "the attacher removes it once those are detached and deleted",
    };
  }
  return undefined;
}

function snapshotVerdict(
  inputs: DoctorInputs,
  snapshot: VolumeSnapshot,
  finalizer: string,
): Verdict | undefined {
  const { cluster } = inputs;
  const namespace = snapshot.metadata.namespace;
  const name = snapshot.metadata.name ?? "";
  switch (finalizer) {
    case FINALIZERS.volumeSnapshotBound.key: {
      const contentName = snapshot.status?.boundVolumeSnapshotContentName;
      const content = cluster.volumeSnapshotContents?.find((c) => c.metadata.name === contentName);
      if (!content) return { gone: true, why: `its content ${contentName ?? "(none)"} is gone` };
      const ref = content.spec.volumeSnapshotRef;
      if (ref.uid !== snapshot.metadata.uid)
        return { gone: true, why: `its content ${contentName} is bound to another snapshot` };
      if (content.spec.deletionPolicy === "Retain")
        return { gone: true, why: `its content ${contentName} is retained (deletionPolicy Retain)` };
      return {
        gone: false,
        why: `its content ${contentName} (deletionPolicy Delete) still exists`,
        manual:
          "run the snapshot-controller and the driver's snapshotter: they delete the content, then release it",
      };
    }
    case FINALIZERS.volumeSnapshotAsSource.key:
    case FINALIZERS.snapshotAsSourceProtectionProvisioner.key: {
      const restores = pendingClaimsFromSource(cluster.persistentVolumeClaims, {
        namespace,
        kind: "VolumeSnapshot",
        name,
      });
      if (restores.length === 0) return { gone: true, why: "no claim is being restored from it" };
      return {
        gone: false,
        why: `claims being restored from it: ${restores.map((c) => c.metadata.name).join(", ")}`,
        manual: "wait for the restores to be provisioned (is the provisioner running?)",
      };
    }
    case FINALIZERS.volumeSnapshotInGroup.key: {
      const group = snapshot.status?.volumeGroupSnapshotName;
      if (!group) return { gone: true, why: "it names no group snapshot" };
      return undefined; // Group snapshots are not collected: their lifetime is the controller's.
    }
    default:
      return undefined;
  }
}

function contentVerdict(
  inputs: DoctorInputs,
  content: VolumeSnapshotContent,
  finalizer: string,
): Verdict | undefined {
  if (finalizer !== FINALIZERS.volumeSnapshotContentBound.key) return undefined;
  const ref = content.spec.volumeSnapshotRef;
  const snapshot = inputs.cluster.volumeSnapshots?.find(
    (s) =>
      s.metadata.namespace === ref.namespace && s.metadata.name === ref.name && s.metadata.uid === ref.uid,
  );
  if (snapshot)
    return {
      gone: false,
      why: `its VolumeSnapshot ${ref.namespace}/${ref.name} still exists`,
      manual: "delete the VolumeSnapshot first",
    };
  if (content.spec.deletionPolicy === "Retain")
    return {
      gone: true,
      why: `its VolumeSnapshot ${ref.namespace}/${ref.name} is gone and deletionPolicy is Retain`,
    };
  const handle = content.status?.snapshotHandle ?? content.spec.source.snapshotHandle;
  const backend = inputs.backend;
  if (handle && backend?.driverName === content.spec.driver && backend.snapshots !== undefined) {
    if (!backend.snapshots.some((s) => s.snapshotId === handle))
      return { gone: true, why: `its VolumeSnapshot is gone and backend snapshot ${handle} is gone` };
  }
  return {
    gone: false,
    why: handle
      ? `backend snapshot ${handle} may still exist: DeleteSnapshot has not been confirmed`
      : "it has no snapshot handle: CreateSnapshot may still be running",
    manual: `run the snapshotter of driver ${content.spec.driver}: it calls DeleteSnapshot, then removes the finalizer`,
  };
}

function attachmentVerdict(
  inputs: DoctorInputs,
  va: VolumeAttachment,
  finalizer: string,
): Verdict | undefined {
  if (finalizer !== attacherFinalizer(va.spec.attacher)) return undefined;
  const nodeGone = !inputs.cluster.nodes.some((n) => n.metadata.name === va.spec.nodeName);
  const pvName = va.spec.source.persistentVolumeName;
  const pv = inputs.cluster.persistentVolumes.find((p) => p.metadata.name === pvName);
  const handle = pv?.spec?.csi?.volumeHandle;
  const backend = inputs.backend;
  const manual = `run the attacher of driver ${va.spec.attacher}: it calls ControllerUnpublishVolume, then removes the finalizer`;
  if (backend?.driverName === va.spec.attacher && backend.volumes !== undefined && handle) {
    const entry = backend.volumes.find((e) => e.volume?.volumeId === handle);
    if (!entry) return { gone: true, why: `its volume ${handle} is gone from the backend` };
    const nodeId = va.metadata.annotations?.[ANNOTATIONS.attachmentNodeID.key];
    if (backend.publishedNodes && nodeId && !(entry.status?.publishedNodeIds ?? []).includes(nodeId))
      return { gone: true, why: `the backend does not publish volume ${handle} to node ID ${nodeId}` };
  }
  return {
    gone: false,
    why: `ControllerUnpublish of node ${va.spec.nodeName}${nodeGone ? " (deleted)" : ""} is not confirmed by the backend`,
    manual,
  };
}

export function checkFinalizers(inputs: DoctorInputs): Finding[] {
  const { cluster } = inputs;
  return [
    ...judge(inputs, "PersistentVolumeClaim", cluster.persistentVolumeClaims, (o: PersistentVolumeClaim, f) =>
      claimVerdict(inputs, o, f),
    ),
    ...judge(inputs, "PersistentVolume", cluster.persistentVolumes, (o: PersistentVolume, f) =>
      volumeVerdict(inputs, o, f),
    ),
    ...judge(inputs, "VolumeSnapshot", cluster.volumeSnapshots, (o: VolumeSnapshot, f) =>
      snapshotVerdict(inputs, o, f),
    ),
    ...judge(inputs, "VolumeSnapshotContent", cluster.volumeSnapshotContents, (o: VolumeSnapshotContent, f) =>
      contentVerdict(inputs, o, f),
    ),
    ...judge(inputs, "VolumeAttachment", cluster.volumeAttachments, (o: VolumeAttachment, f) =>
      attachmentVerdict(inputs, o, f),
    ),
  ];
}
