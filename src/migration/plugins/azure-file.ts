// Azure File ↔ file.csi.azure.com. The handle is composed as
// `<resource group>#<storage account>#<share>#<disk name, empty>#<secret namespace>` — the account comes from the in-tree secret's
// name (`azure-storage-account-<account>-secret`, else the whole name), the resource group
// from the PV annotation `kubernetes.io/azure-file-resource-group`. The secret becomes the
// node-stage secret (namespace: the PV's secretNamespace, else its claim's namespace as the
// in-tree plugin did; the pod's namespace for inline volumes; else "default"). The reverse reads share and secret from attributes and the stage
// secret, falling back to the handle's parts, and restores the resource-group annotation.

import type { PersistentVolume, StorageClass, Volume } from "../../api/index.ts";
import { TranslationError } from "../errors.ts";
import type { InTreePlugin } from "../types.ts";
import {
  csiSource,
  csiSourceOf,
  describePV,
  describeVolume,
  inTreeSource,
  optionalBool,
  requiredString,
  setCSISource,
  setInTreeSource,
} from "../util.ts";

export const AZURE_FILE_DRIVER_NAME = "file.csi.azure.com";
export const AZURE_FILE_IN_TREE_PLUGIN_NAME = "kubernetes.io/azure-file";
export const AZURE_FILE_RESOURCE_GROUP_ANNOTATION = "kubernetes.io/azure-file-resource-group";
const SHARE_NAME = "sharename";
const SECRET_NAME = "secretname";
const SECRET_NAMESPACE = "secretnamespace";
const DEFAULT_SECRET_NAMESPACE = "default";
const SECRET_NAME_FORMAT = /azure-storage-account-(.+)-secret/;

/** The storage account in a secret name of the in-tree form, or the whole name otherwise. */
export function storageAccountOf(secretName: string): string {
  const match = SECRET_NAME_FORMAT.exec(secretName);
  return match?.[1] ?? secretName;
}

function volumeHandle(resourceGroup: string, account: string, share: string, namespace: string): string {
  return `${resourceGroup}#${account}#${share}##${namespace}`;
}

/** [resourceGroup, account, share, secretNamespace] of a handle with at least three `#` parts. */
export function fileShareInfo(handle: string): [string, string, string, string] {
  const parts = handle.split("#");
  if (parts.length < 3)
    throw new TranslationError(
      `error parsing volume id: ${JSON.stringify(handle)}, should at least contain two #`,
    );
  return [parts[0]!, parts[1]!, parts[2]!, parts[4] ?? ""];
}

export const azureFile: InTreePlugin = {
  inTreePluginName: AZURE_FILE_IN_TREE_PLUGIN_NAME,
  csiDriverName: AZURE_FILE_DRIVER_NAME,
  sourceField: "azureFile",

  // Upstream passes Azure File classes through unchanged: the driver reads the same parameters.
  translateStorageClassToCSI(sc: StorageClass): StorageClass {
    return sc;
  },

  translateInlineVolumeToCSI(volume: Volume, podNamespace: string): PersistentVolume {
    const where = `${describeVolume(volume)} (azureFile)`;
    const source = inTreeSource(volume, "azureFile", describeVolume(volume));
    const secretName = requiredString(source, "secretName", where);
    const shareName = requiredString(source, "shareName", where);
    const namespace = podNamespace !== "" ? podNamespace : DEFAULT_SECRET_NAMESPACE;
    return {
      metadata: { name: `${AZURE_FILE_DRIVER_NAME}-${shareName}` },
      spec: {
        csi: csiSource({
          driver: AZURE_FILE_DRIVER_NAME,
          volumeHandle: volumeHandle("", storageAccountOf(secretName), shareName, namespace),
          readOnly: optionalBool(source, "readOnly", where),
          volumeAttributes: { [SHARE_NAME]: shareName },
          nodeStageSecretRef: { name: secretName, namespace },
        }),
        accessModes: ["ReadWriteMany"],
      },
    };
  },

  translatePVToCSI(pv: PersistentVolume): PersistentVolume {
    const where = `${describePV(pv)} (azureFile)`;
    const source = inTreeSource(pv.spec, "azureFile", describePV(pv));
    const secretName = requiredString(source, "secretName", where);
    const shareName = requiredString(source, "shareName", where);
    const namespace = source.secretNamespace;
    if (namespace !== undefined && namespace !== null && typeof namespace !== "string")
      throw new TranslationError(
        `${where}: secretNamespace must be a string, got ${JSON.stringify(namespace)}`,
      );
    const resourceGroup = pv.metadata?.annotations?.[AZURE_FILE_RESOURCE_GROUP_ANNOTATION] ?? "";
    const claimNamespace = pv.spec?.claimRef?.namespace ?? "";
    // An explicit secretNamespace (even "") wins; nil means the claim's namespace, as in-tree.
    const secretNamespace =
      typeof namespace === "string"
        ? namespace
        : claimNamespace !== ""
          ? claimNamespace
          : DEFAULT_SECRET_NAMESPACE;
    setCSISource(
      pv,
      "azureFile",
      csiSource({
        driver: AZURE_FILE_DRIVER_NAME,
        volumeHandle: volumeHandle(resourceGroup, storageAccountOf(secretName), shareName, secretNamespace),
        readOnly: optionalBool(source, "readOnly", where),
        volumeAttributes: { [SHARE_NAME]: shareName },
        nodeStageSecretRef: { name: secretName, namespace: secretNamespace },
      }),
    );
    return pv;
  },

  translateCSIPVToInTree(pv: PersistentVolume): PersistentVolume {
    const csi = csiSourceOf(pv);
    let shareName = "";
    let secretName = "";
    let secretNamespace: string | undefined;
    for (const [key, value] of Object.entries(csi.volumeAttributes ?? {})) {
      const lower = key.toLowerCase();
      if (lower === SHARE_NAME) shareName = value;
      else if (lower === SECRET_NAME) secretName = value;
      else if (lower === SECRET_NAMESPACE) secretNamespace = value;
    }
    const stage = csi.nodeStageSecretRef;
    if (stage?.name !== undefined && stage.name !== "") {
      secretName = stage.name;
      secretNamespace = stage.namespace ?? "";
    }
    let resourceGroup = "";
    if (shareName === "" || secretName === "") {
      const [group, account, share, namespace] = fileShareInfo(csi.volumeHandle);
      if (shareName === "") shareName = share;
      if (secretNamespace === undefined && namespace !== "") secretNamespace = namespace;
      if (secretName === "") secretName = `azure-storage-account-${account}-secret`;
      resourceGroup = group;
    }
    const azure: Record<string, unknown> = { secretName, shareName };
    if (csi.readOnly === true) azure.readOnly = true;
    azure.secretNamespace = secretNamespace ?? DEFAULT_SECRET_NAMESPACE;
    setInTreeSource(pv, "azureFile", azure);
    if (resourceGroup !== "")
      ((pv.metadata ??= {}).annotations ??= {})[AZURE_FILE_RESOURCE_GROUP_ANNOTATION] = resourceGroup;
    return pv;
  },

  repairVolumeHandle(volumeHandle: string): string {
    return volumeHandle;
  },
};
