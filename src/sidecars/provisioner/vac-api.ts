// Where the provisioner reads VolumeAttributesClasses: storage.k8s.io/v1 (GA in Kubernetes
// 1.34, what external-provisioner v6 reads), falling back to v1beta1 only when the server does
// not serve v1 (a 1.31–1.33 cluster, where v5.x read v1beta1). A server that serves neither
// turns the VolumeAttributesClass gate off, as upstream v6 does when the v1 API is absent
// (external-provisioner#1423), so claims still provision — without mutable parameters.

import { GVR, type GroupVersionKindResource } from "../../api/index.ts";
import type { Logger } from "../../base/index.ts";
import { firstServedVersion, type KubeClient } from "../../kube/index.ts";

/** Preferred first. Built from GVR's entry so group, resource and kind stay spelled once. */
export const VOLUME_ATTRIBUTES_CLASS_VERSIONS: readonly GroupVersionKindResource[] = ["v1", "v1beta1"].map(
  (version) => Object.freeze({ ...GVR.volumeAttributesClasses, version }),
);

/** The version to read, or undefined: the gate is off (not asked for, or nothing served). */
export async function volumeAttributesClassApi(
  client: KubeClient,
  options: { enabled: boolean; logger: Logger; signal?: AbortSignal },
): Promise<GroupVersionKindResource | undefined> {
  if (!options.enabled) return undefined;
  const served = await firstServedVersion(client, VOLUME_ATTRIBUTES_CLASS_VERSIONS, options.signal);
  if (served === undefined)
    options.logger.info(
      0,
      "VolumeAttributesClass is not served (neither storage.k8s.io/v1 nor v1beta1): the VolumeAttributesClass feature is off",
      {},
    );
  else
    options.logger.info(2, "reading VolumeAttributesClasses", {
      apiVersion: `${served.group}/${served.version}`,
    });
  return served;
}
