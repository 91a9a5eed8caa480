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
import { storageResources } from "./storage.ts";
import { volumeResources } from "./volumes.ts";
import { workloadResources } from "./workloads.ts";

/** Every built-in kind the server serves, in discovery order. */
export function builtinResourceDefs(): readonly ResourceDef[] {
  return [
    ...workloadResources,
    ...volumeResources,
    ...configResources,
    ...eventResources,
    ...storageResources,
    leases,
    customResourceDefinitions,
    ...appsResources,
    ...batchResources,
    ...rbacResources,
    ...reviewResources,
  ];
}
