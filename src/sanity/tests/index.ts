// The sanity catalogue, in run order: Identity, Controller, Node, GroupController.

import type { SanityTest } from "../framework.ts";
import { controllerListTests } from "./controller-list.ts";
import { controllerPublishTests } from "./controller-publish.ts";
import { controllerVolumeTests } from "./controller-volumes.ts";
import { groupControllerTests } from "./group-controller.ts";
import { identityTests } from "./identity.ts";
import { nodeLifecycleTests } from "./node-lifecycle.ts";
import { nodeTests } from "./node.ts";
import { snapshotMetadataTests } from "./snapshot-metadata.ts";
import { snapshotTests } from "./snapshots.ts";

/** Every test of the suite; a fresh list per call. */
export function catalogue(): SanityTest[] {
  return [
    ...identityTests(),
    ...controllerVolumeTests(),
    ...controllerListTests(),
    ...controllerPublishTests(),
    ...snapshotTests(),
    ...snapshotMetadataTests(),
    ...nodeTests(),
    ...nodeLifecycleTests(),
    ...groupControllerTests(),
  ];
}
