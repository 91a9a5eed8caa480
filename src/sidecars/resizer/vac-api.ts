// Where the resizer reads VolumeAttributesClasses: storage.k8s.io/v1 (GA in Kubernetes 1.34, what
// external-resizer v2 reads), else v1beta1 (a 1.31–1.33 server). A server that serves neither
// turns the VolumeAttributesClass gate off, as upstream v2.0 does when the v1 API is absent
// (external-resizer#532): expansion goes on, modification does not run.

import { GVR, type GroupVersionKindResource } from "../../api/index.ts";
import type { Logger } from "../../base/index.ts";
import { firstServedVersion, type KubeClient } from "../../kube/index.ts";

/** Preferred first; group, resource and kind spelled once, in GVR. */
const VERSIONS: readonly GroupVersionKindResource[] = ["v1", "v1beta1"].map((version) =>
  Object.freeze({ ...GVR.volumeAttributesClasses, version }),
);

/** The version to read, or undefined: the modify controller does not run. */
export async function servedVolumeAttributesClassApi(
  client: KubeClient,
  logger: Logger,
  signal: AbortSignal,
): Promise<GroupVersionKindResource | undefined> {
  const served = await firstServedVersion(client, VERSIONS, signal);
  if (served === undefined)
    logger.info(
      0,
      "VolumeAttributesClass is not served (neither storage.k8s.io/v1 nor v1beta1): the VolumeAttributesClass feature is off",
      {},
    );
  return served;
}
