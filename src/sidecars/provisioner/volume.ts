// The PersistentVolume built from a successful CreateVolume, shaped as upstream's: name
// `<prefix>-<uid>`, annotation provisioned-by (+ the deletion-secret annotations, "" when the
// class has no provisioner secret, so deletion never re-resolves templates), the
// HonorPVReclaimPolicy finalizer for reclaim Delete, spec.csi with the response's
// volume_context plus csiProvisionerIdentity and the secret refs, capacity from the response
// (the request when the driver reports 0), access modes / volume mode / mount options / class /
// reclaim policy, claimRef, nodeAffinity from accessible_topology, VolumeAttributesClass.

import {
  ANNOTATIONS,
  FINALIZERS,
  PROVISIONER_IDENTITY_ATTRIBUTE,
  formatQuantity,
  quantityFromValue,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
} from "../../api/index.ts";
import type { Volume } from "../../csi/index.ts";
import { ProvisionError } from "./errors.ts";
import type { PreparedProvision } from "./request.ts";
import { volumeNodeAffinity } from "./topology.ts";

export interface VolumeOptions {
  driverName: string;
  identity: string;
  honorPVReclaimPolicy: boolean;
  controllerPublishReadonly: boolean;
  volumeAttributesClass: boolean;
  /**
   * Whether topology is supported (the Topology gate and the driver's
   * VOLUME_ACCESSIBILITY_CONSTRAINTS): only then does the PV get nodeAffinity from
   * accessible_topology, as upstream's supportsTopology(). Default true.
   */
  topology?: boolean;
}

export function buildVolume(
  options: VolumeOptions,
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  prepared: PreparedProvision,
  response: Volume,
): PersistentVolume {
  let capacity = BigInt(response.capacityBytes || "0");
  if (capacity === 0n) capacity = prepared.requestedBytes;
  else if (capacity < prepared.requestedBytes)
    throw new ProvisionError(
      `created volume capacity ${capacity} less than requested capacity ${prepared.requestedBytes}`,
    );
  if (prepared.dataSource && !response.contentSource)
    throw new ProvisionError(
      `volume content source missing in the CreateVolume response for data source ${prepared.dataSource.kind} ${prepared.dataSource.namespace}/${prepared.dataSource.name}`,
    );
  const reclaimPolicy = storageClass.reclaimPolicy ?? "Delete";
  const accessModes = claim.spec?.accessModes ?? [];
  const readOnly =
    options.controllerPublishReadonly && accessModes.length === 1 && accessModes[0] === "ReadOnlyMany";
  const refs = prepared.secretRefs;
  const csi: NonNullable<PersistentVolume["spec"]>["csi"] = {
    driver: options.driverName,
    volumeHandle: response.volumeId,
    volumeAttributes: { ...response.volumeContext, [PROVISIONER_IDENTITY_ATTRIBUTE]: options.identity },
    ...(readOnly ? { readOnly: true } : {}),
    ...(!prepared.block && prepared.fsType !== "" ? { fsType: prepared.fsType } : {}),
    ...(refs.controllerPublish ? { controllerPublishSecretRef: refs.controllerPublish } : {}),
    ...(refs.nodeStage ? { nodeStageSecretRef: refs.nodeStage } : {}),
    ...(refs.nodePublish ? { nodePublishSecretRef: refs.nodePublish } : {}),
    ...(refs.controllerExpand ? { controllerExpandSecretRef: refs.controllerExpand } : {}),
    ...(refs.nodeExpand ? { nodeExpandSecretRef: refs.nodeExpand } : {}),
  };
  const annotations: Record<string, string> = {
    [ANNOTATIONS.provisionedBy.key]: options.driverName,
    [ANNOTATIONS.provisionerDeletionSecretName.key]: prepared.provisionerSecret?.name ?? "",
    [ANNOTATIONS.provisionerDeletionSecretNamespace.key]: prepared.provisionerSecret?.namespace ?? "",
  };
  if (refs.controllerModify) {
    annotations["volume.kubernetes.io/controller-modify-secret-name"] = refs.controllerModify.name;
    annotations["volume.kubernetes.io/controller-modify-secret-namespace"] = refs.controllerModify.namespace;
  }
  const affinity = options.topology === false ? undefined : volumeNodeAffinity(response.accessibleTopology);
  const vacName = claim.spec?.volumeAttributesClassName;
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: {
      name: prepared.pvName,
      annotations,
      ...(options.honorPVReclaimPolicy && reclaimPolicy === "Delete"
        ? { finalizers: [FINALIZERS.provisionerDeletion.key] }
        : {}),
    },
    spec: {
      accessModes: [...accessModes],
      capacity: { storage: formatQuantity(quantityFromValue(capacity)) },
      persistentVolumeReclaimPolicy: reclaimPolicy,
      storageClassName: storageClass.metadata?.name ?? "",
      ...(storageClass.mountOptions && storageClass.mountOptions.length > 0
        ? { mountOptions: [...storageClass.mountOptions] }
        : {}),
      volumeMode: claim.spec?.volumeMode ?? "Filesystem",
      claimRef: {
        kind: "PersistentVolumeClaim",
        apiVersion: "v1",
        namespace: claim.metadata?.namespace ?? "",
        name: claim.metadata?.name ?? "",
        uid: claim.metadata?.uid ?? "",
        ...(claim.metadata?.resourceVersion ? { resourceVersion: claim.metadata.resourceVersion } : {}),
      },
      ...(affinity ? { nodeAffinity: affinity } : {}),
      ...(options.volumeAttributesClass && vacName ? { volumeAttributesClassName: vacName } : {}),
      csi,
    },
  };
}
