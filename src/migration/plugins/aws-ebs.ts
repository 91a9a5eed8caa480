// AWS EBS ↔ ebs.csi.aws.com. In-tree volume IDs may be `aws://<zone>/vol-…`, `aws:///vol-…` or a
// bare `vol-…`; the CSI handle is always the bare ID. The partition always travels as a volume
// attribute ("0" for the whole disk). `iopsPerGB` classes also get
// `allowautoiopspergbincrease=true`, because the in-tree plugin silently raised IOPS to the
// disk type's minimum and the CSI driver only does so when asked.

import type { PersistentVolume, StorageClass, Volume } from "../../api/index.ts";
import { TranslationError } from "../errors.ts";
import { translateTopologyToCSI, translateTopologyToInTree, zonalStorageClassTopology } from "../topology.ts";
import type { AWSElasticBlockStoreVolumeSource, InTreePlugin } from "../types.ts";
import {
  CSI_FSTYPE_PARAM,
  FSTYPE_PARAM,
  csiSource,
  csiSourceOf,
  describePV,
  describeVolume,
  inTreeSource,
  omitEmpty,
  optionalBool,
  optionalInt,
  optionalString,
  parseIntAttribute,
  requiredString,
  setCSISource,
  setInTreeSource,
} from "../util.ts";

export const AWS_EBS_DRIVER_NAME = "ebs.csi.aws.com";
export const AWS_EBS_IN_TREE_PLUGIN_NAME = "kubernetes.io/aws-ebs";
export const AWS_EBS_TOPOLOGY_KEY = "topology.ebs.csi.aws.com/zone";
const IOPS_PER_GB_PARAM = "iopspergb";
const ALLOW_INCREASE_IOPS_PARAM = "allowautoiopspergbincrease";

const EBS_VOLUME_ID = /^vol-[^/]*$/;

/** The bare EBS volume ID of a Kubernetes volume ID (see the module header for the forms). */
export function ebsVolumeID(kubernetesID: string): string {
  if (!kubernetesID.startsWith("aws://")) return kubernetesID;
  let url: URL;
  try {
    url = new URL(kubernetesID);
  } catch (error) {
    throw new TranslationError(`Invalid disk name (${kubernetesID}): ${(error as Error).message}`);
  }
  const id = url.pathname.replace(/^\/+|\/+$/g, "");
  if (!EBS_VOLUME_ID.test(id)) throw new TranslationError(`Invalid format for AWS volume (${kubernetesID})`);
  return id;
}

/**
 * The region of AWS zones: us-west-2a → us-west-2, us-gov-east-1a → us-gov-east-1, local
 * zones (us-west-2-lax-1a) and wavelength zones (us-east-1-wl1-bos-wlz-1) → their parent region.
 */
export function awsRegionFromZones(zones: readonly string[]): string {
  if (zones.length === 0) throw new TranslationError("no zones specified");
  const regions = new Set<string>();
  for (const zone of zones) {
    const parts = zone.split("-");
    const last = parts[parts.length - 1]!;
    if ((parts.length === 3 || parts.length === 4) && last.length === 2) {
      parts[parts.length - 1] = last.slice(0, 1);
      regions.add(parts.join("-"));
    } else if (parts.length === 5 || parts.length === 7) {
      regions.add(parts.slice(0, 3).join("-"));
    } else throw new TranslationError(`Unexpected zone format: ${zone} is not a valid AWS zone`);
  }
  if (regions.size !== 1)
    throw new TranslationError(`multiple or no regions gotten from zones, got: ${[...regions].join(",")}`);
  return [...regions][0]!;
}

function readSource(
  source: Record<string, unknown>,
  where: string,
): Required<AWSElasticBlockStoreVolumeSource> {
  return {
    volumeID: requiredString(source, "volumeID", where),
    fsType: optionalString(source, "fsType", where),
    partition: optionalInt(source, "partition", where),
    readOnly: optionalBool(source, "readOnly", where),
  };
}

function handleOf(ebs: Required<AWSElasticBlockStoreVolumeSource>, where: string): string {
  try {
    return ebsVolumeID(ebs.volumeID);
  } catch (error) {
    throw new TranslationError(
      `${where}: failed to translate Kubernetes ID to EBS Volume ID: ${(error as Error).message}`,
    );
  }
}

export const awsElasticBlockStore: InTreePlugin = {
  inTreePluginName: AWS_EBS_IN_TREE_PLUGIN_NAME,
  csiDriverName: AWS_EBS_DRIVER_NAME,
  sourceField: "awsElasticBlockStore",

  translateStorageClassToCSI(sc: StorageClass): StorageClass {
    sc.parameters = zonalStorageClassTopology(sc, AWS_EBS_TOPOLOGY_KEY, (key, value, params) => {
      const lower = key.toLowerCase();
      if (lower === FSTYPE_PARAM) params[CSI_FSTYPE_PARAM] = value;
      else if (lower === IOPS_PER_GB_PARAM) {
        params[key] = value;
        params[ALLOW_INCREASE_IOPS_PARAM] = "true";
      } else params[key] = value;
    });
    return sc;
  },

  translateInlineVolumeToCSI(volume: Volume): PersistentVolume {
    const where = `${describeVolume(volume)} (awsElasticBlockStore)`;
    const ebs = readSource(inTreeSource(volume, "awsElasticBlockStore", describeVolume(volume)), where);
    const handle = handleOf(ebs, where);
    return {
      metadata: { name: `${AWS_EBS_DRIVER_NAME}-${handle}` },
      spec: {
        csi: csiSource({
          driver: AWS_EBS_DRIVER_NAME,
          volumeHandle: handle,
          readOnly: ebs.readOnly,
          fsType: ebs.fsType,
          volumeAttributes: { partition: String(ebs.partition) },
        }),
        accessModes: ["ReadWriteOnce"],
      },
    };
  },

  translatePVToCSI(pv: PersistentVolume): PersistentVolume {
    const where = `${describePV(pv)} (awsElasticBlockStore)`;
    const ebs = readSource(inTreeSource(pv.spec, "awsElasticBlockStore", describePV(pv)), where);
    const handle = handleOf(ebs, where);
    translateTopologyToCSI(pv, AWS_EBS_TOPOLOGY_KEY);
    setCSISource(
      pv,
      "awsElasticBlockStore",
      csiSource({
        driver: AWS_EBS_DRIVER_NAME,
        volumeHandle: handle,
        readOnly: ebs.readOnly,
        fsType: ebs.fsType,
        volumeAttributes: { partition: String(ebs.partition) },
      }),
    );
    return pv;
  },

  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
    const csi = csiSourceOf(pv);
    const partitionText = csi.volumeAttributes?.partition;
    const partition = partitionText !== undefined ? parseIntAttribute(partitionText, "partition") : 0;
    try {
      translateTopologyToInTree(pv, AWS_EBS_TOPOLOGY_KEY, awsRegionFromZones);
    } catch (error) {
      throw new TranslationError(
        `${describePV(pv)}: failed to translate topology: ${(error as Error).message}`,
      );
    }
    setInTreeSource(
      pv,
      "awsElasticBlockStore",
      omitEmpty({ volumeID: csi.volumeHandle, fsType: csi.fsType, partition, readOnly: csi.readOnly }),
    );
    return pv;
  },

  repairVolumeHandle(volumeHandle: string): string {
    return volumeHandle;
  },
};
