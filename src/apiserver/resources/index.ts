// The built-in resource definitions of the embedded API server, one module per group or kind.
export * from "./storage.ts";
export * from "./volumes.ts";
export * from "./workloads.ts";
export * from "./config.ts";
export * from "./events.ts";
export * from "./coordination.ts";
export * from "./apiextensions.ts";
export * from "./apps.ts";
export * from "./batch.ts";
export * from "./rbac.ts";
export * from "./reviews.ts";
export { defineResource } from "./common.ts";
export {
  builtinComponentName,
  builtinComponentSchemas,
  builtinModelOf,
  pruneBuiltinFields,
  unknownBuiltinFields,
} from "./builtin-schema.ts";
export { builtinDecodeError } from "./builtin-decode.ts";
export type { KindSpec } from "./common.ts";

import type { ResourceDef } from "../rest/resource.ts";
import { customResourceDefinitions } from "./apiextensions.ts";
import { appsResources } from "./apps.ts";
import { batchResources } from "./batch.ts";
import { rbacResources } from "./rbac.ts";
import { reviewResources } from "./reviews.ts";
import { configResources } from "./config.ts";
import { leases } from "./coordination.ts";
import { eventResources } from "./events.ts";
import { storageResourcesOf } from "./storage.ts";
import { volumeResourcesOf } from "./volumes.ts";
import { kubeRelease, type KubeRelease } from "../../api/index.ts";
import { workloadResources } from "./workloads.ts";

/** Every built-in kind a server acting as `release` serves, in discovery order. */
export function builtinResourceDefs(release: KubeRelease = kubeRelease()): readonly ResourceDef[] {
  return [
    ...workloadResources,
    ...volumeResourcesOf(release),
    ...configResources,
    ...eventResources,
    ...storageResourcesOf(release),
    leases,
    customResourceDefinitions,
    ...appsResources,
    ...batchResources,
    ...rbacResources,
    ...reviewResources,
  ];
}
