// Finalizer and annotation edits as JSON patches guarded by `test` operations, so they never
// need the latest resourceVersion (no conflict loops with the PV controller editing the same
// claim) yet can never apply to a different object (uid test) or remove the wrong list entry
// (value test at the index). Adding a finalizer to an object being deleted fails at the API
// server, which is exactly what the in-flight mark needs (see claim-sync.ts).

import { FINALIZERS } from "../../api/index.ts";
import type { GroupVersionResource, KubeClient, KubeObject } from "../../kube/index.ts";

/** The durable in-flight mark (see claim-sync.ts). */
export const IN_FLIGHT_FINALIZER = FINALIZERS.provisionerVolumeInFlight.key;

export function hasFinalizer(object: KubeObject, name: string): boolean {
  return object.metadata?.finalizers?.includes(name) ?? false;
}

function where(object: KubeObject): { namespace?: string } {
  return object.metadata?.namespace ? { namespace: object.metadata.namespace } : {};
}

/** Adds `name` unless present; returns the updated object (or the input when nothing changed). */
export async function addFinalizer<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  name: string,
  signal?: AbortSignal,
): Promise<T> {
  if (hasFinalizer(object, name)) return object;
  const uidTest = { op: "test", path: "/metadata/uid", value: object.metadata?.uid };
  const patch = object.metadata?.finalizers
    ? [uidTest, { op: "add", path: "/metadata/finalizers/-", value: name }]
    : [uidTest, { op: "add", path: "/metadata/finalizers", value: [name] }];
  return client.patch<T>(gvr, object.metadata?.name ?? "", patch, { ...where(object), type: "json" }, signal);
}

/** Removes `name` if present (by index, guarded by a value test). */
export async function removeFinalizer<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  name: string,
  signal?: AbortSignal,
): Promise<T> {
  const index = object.metadata?.finalizers?.indexOf(name) ?? -1;
  if (index < 0) return object;
  const patch = [
    { op: "test", path: "/metadata/uid", value: object.metadata?.uid },
    { op: "test", path: `/metadata/finalizers/${index}`, value: name },
    { op: "remove", path: `/metadata/finalizers/${index}` },
  ];
  return client.patch<T>(gvr, object.metadata?.name ?? "", patch, { ...where(object), type: "json" }, signal);
}

/** Removes an annotation guarded by its current value (reschedule: selected-node). */
export async function removeAnnotation<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  key: string,
  signal?: AbortSignal,
): Promise<T> {
  const value = object.metadata?.annotations?.[key];
  if (value === undefined) return object;
  const path = `/metadata/annotations/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
  const patch = [
    { op: "test", path: "/metadata/uid", value: object.metadata?.uid },
    { op: "test", path, value },
    { op: "remove", path },
  ];
  return client.patch<T>(gvr, object.metadata?.name ?? "", patch, { ...where(object), type: "json" }, signal);
}
