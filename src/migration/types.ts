// The in-tree volume sources the migration library reads and writes (core/v1 JSON field names),
// and the one interface every plugin translator implements. csikit's API types keep in-tree
// sources as generic records; this module gives them their shapes for the translators only.

import type {
  LocalObjectReference,
  PersistentVolume,
  SecretReference,
  StorageClass,
  Volume,
} from "../api/index.ts";

export interface GCEPersistentDiskVolumeSource {
  pdName: string;
  fsType?: string;
  partition?: number;
  readOnly?: boolean;
}

export interface AWSElasticBlockStoreVolumeSource {
  volumeID: string;
  fsType?: string;
  partition?: number;
  readOnly?: boolean;
}

export interface CinderVolumeSource {
  volumeID: string;
  fsType?: string;
  readOnly?: boolean;
  secretRef?: SecretReference | LocalObjectReference;
}

export interface AzureDiskVolumeSource {
  diskName: string;
  /** Go's DataDiskURI; `diskURI` on the wire. */
  diskURI: string;
  cachingMode?: string;
  fsType?: string;
  readOnly?: boolean;
  kind?: string;
}

export interface AzureFileVolumeSource {
  secretName: string;
  shareName: string;
  readOnly?: boolean;
  /** PersistentVolume form only (inline volumes use the pod's namespace). */
  secretNamespace?: string | null;
}

export interface VsphereVirtualDiskVolumeSource {
  volumePath: string;
  fsType?: string;
  storagePolicyName?: string;
  storagePolicyID?: string;
}

export interface PortworxVolumeSource {
  volumeID: string;
  fsType?: string;
  readOnly?: boolean;
}

/** The JSON field of each in-tree source in a PersistentVolumeSpec and in a pod Volume. */
export type InTreeSourceField =
  | "gcePersistentDisk"
  | "awsElasticBlockStore"
  | "cinder"
  | "azureDisk"
  | "azureFile"
  | "vsphereVolume"
  | "portworxVolume";

/**
 * One in-tree plugin's translation rules (upstream csi-translation-lib's InTreePlugin). The
 * translate functions receive a private deep copy and may change it; callers go through
 * translator.ts, which makes that copy so the caller's object is never modified.
 */
export interface InTreePlugin {
  /** In-tree plugin name, e.g. `kubernetes.io/gce-pd`. */
  readonly inTreePluginName: string;
  /** CSI driver name that supersedes it, e.g. `pd.csi.storage.gke.io`. */
  readonly csiDriverName: string;
  /** The source field this plugin owns in PVs and pod volumes. */
  readonly sourceField: InTreeSourceField;
  translateStorageClassToCSI(sc: StorageClass): StorageClass;
  /** podNamespace matters to Azure File only (the secret's namespace). */
  translateInlineVolumeToCSI(volume: Volume, podNamespace: string): PersistentVolume;
  translatePVToCSI(pv: PersistentVolume): PersistentVolume;
  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume;
  /** Fills UNSPECIFIED parts of a volume handle from the node ID (GCE PD); others return it. */
  repairVolumeHandle(volumeHandle: string, nodeID: string): string;
}
