// storage.k8s.io/v1 kinds: StorageClass, CSIDriver, CSINode, VolumeAttachment,
// CSIStorageCapacity, VolumeAttributesClass.

import type { NodeSelector, PersistentVolumeReclaimPolicy, PersistentVolumeSpec } from "./core.ts";
import type { KubeResource, LabelSelector, QuantityString } from "./meta.ts";

export type VolumeBindingMode = "Immediate" | "WaitForFirstConsumer";

export interface TopologySelectorTerm {
  matchLabelExpressions?: { key: string; values: string[] }[];
}

export interface StorageClass extends KubeResource {
  provisioner: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: PersistentVolumeReclaimPolicy;
  mountOptions?: string[];
  allowVolumeExpansion?: boolean;
  volumeBindingMode?: VolumeBindingMode;
  allowedTopologies?: TopologySelectorTerm[];
}

export type FSGroupPolicy = "ReadWriteOnceWithFSType" | "File" | "None";
export type VolumeLifecycleMode = "Persistent" | "Ephemeral";

export interface TokenRequest {
  audience: string;
  expirationSeconds?: number;
}

export interface CSIDriverSpec {
  attachRequired?: boolean;
  podInfoOnMount?: boolean;
  volumeLifecycleModes?: VolumeLifecycleMode[];
  storageCapacity?: boolean;
  fsGroupPolicy?: FSGroupPolicy;
  tokenRequests?: TokenRequest[];
  requiresRepublish?: boolean;
  seLinuxMount?: boolean;
  nodeAllocatableUpdatePeriodSeconds?: number;
  /** KEP-5030 (VolumeLimitScaling): the scheduler keeps this driver's pods off nodes without it. */
  preventPodSchedulingIfMissing?: boolean;
  /** KEP-5538: tokens of tokenRequests in NodePublishVolume's secrets, not its volume_context. */
  serviceAccountTokenInSecrets?: boolean;
}

export interface CSIDriver extends KubeResource {
  spec: CSIDriverSpec;
}

export interface CSINodeDriver {
  name: string;
  nodeID: string;
  topologyKeys?: string[] | null;
  allocatable?: { count?: number };
}

export interface CSINode extends KubeResource {
  spec: { drivers: CSINodeDriver[] };
}

export interface VolumeAttachmentSource {
  persistentVolumeName?: string;
  /** Migrated inline volumes: the translated PV spec. */
  inlineVolumeSpec?: PersistentVolumeSpec;
}

export interface VolumeError {
  time?: string;
  message?: string;
  errorCode?: number;
}

export interface VolumeAttachmentSpec {
  attacher: string;
  source: VolumeAttachmentSource;
  nodeName: string;
}

export interface VolumeAttachmentStatus {
  attached: boolean;
  attachmentMetadata?: Record<string, string>;
  attachError?: VolumeError;
  detachError?: VolumeError;
}

export interface VolumeAttachment extends KubeResource {
  spec: VolumeAttachmentSpec;
  status?: VolumeAttachmentStatus;
}

export interface CSIStorageCapacity extends KubeResource {
  nodeTopology?: LabelSelector;
  storageClassName: string;
  capacity?: QuantityString;
  maximumVolumeSize?: QuantityString;
}

export interface VolumeAttributesClass extends KubeResource {
  driverName: string;
  parameters?: Record<string, string>;
}

export type { NodeSelector };
