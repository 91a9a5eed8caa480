// The plugin table: every in-tree plugin upstream csi-translation-lib translates at Kubernetes
// 1.32, in upstream's order. (RBD's translator left with the in-tree RBD plugin in 1.31.)
import type { InTreePlugin } from "../types.ts";
import { awsElasticBlockStore } from "./aws-ebs.ts";
import { azureDisk } from "./azure-disk.ts";
import { azureFile } from "./azure-file.ts";
import { cinder } from "./cinder.ts";
import { gcePersistentDisk } from "./gce-pd.ts";
import { portworxVolume } from "./portworx.ts";
import { vsphereVolume } from "./vsphere.ts";

export * from "./aws-ebs.ts";
export * from "./azure-disk.ts";
export * from "./azure-file.ts";
export * from "./cinder.ts";
export * from "./gce-pd.ts";
export * from "./portworx.ts";
export * from "./vsphere.ts";

export const IN_TREE_PLUGINS: readonly InTreePlugin[] = Object.freeze([
  gcePersistentDisk,
  awsElasticBlockStore,
  cinder,
  azureDisk,
  azureFile,
  vsphereVolume,
  portworxVolume,
]);
