// CSI message types as the sanity suite uses them: what it sends (`…Input`, every field
// optional, int64 as decimal strings) and what it gets back (decoded messages).

export type {
  CreateVolumeRequestInput as CreateVolumeRequest,
  NodeGetInfoResponse as NodeInfo,
  NodePublishVolumeRequestInput as NodePublishRequest,
  NodeStageVolumeRequestInput as NodeStageRequest,
  Snapshot,
  TopologyRequirementInput as TopologyRequirement,
  Volume,
  VolumeCapabilityInput as VolumeCapability,
  VolumeCapability_AccessMode_Mode as AccessModeName,
  VolumeGroupSnapshot,
} from "../csi/index.ts";
