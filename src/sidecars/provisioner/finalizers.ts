// Finalizer and annotation edits as JSON patches guarded by `test` operations, so they never
// need the latest resourceVersion (no conflict loops with the PV controller editing the same
// claim) yet can never apply to a different object (uid test) or remove the wrong list entry
// (value test at the index). Adding a finalizer to an object being deleted fails at the API
// server, which is exactly what the in-flight mark needs (see claim-sync.ts). A failed test on
// a stale copy is retried on a fresh read (guardedPatch), not left to the queue's backoff.

import { FINALIZERS } from "../../api/index.ts";
import {
  apiStatusCode,
  type GroupVersionResource,
  type KubeClient,
  type KubeObject,
} from "../../kube/index.ts";

/** The durable in-flight mark (see claim-sync.ts). */
export const IN_FLIGHT_FINALIZER = FINALIZERS.provisionerVolumeInFlight.key;

export function hasFinalizer(object: KubeObject, name: string): boolean {
  return object.metadata?.finalizers?.includes(name) ?? false;
}

function where(object: KubeObject): { namespace?: string } {
  return object.metadata?.namespace ? { namespace: object.metadata.namespace } : {};
}

/** Guarded patches that fail their `test` (422) are retried on a fresh read this many times. */
const STALE_RETRIES = 2;

/**
 * Applies the patch `build` makes from `object` (undefined: nothing to do). A failed `test`
 * means our copy was stale (e.g. another controller removed a finalizer before ours and the
 * index moved): the object is read again and the patch rebuilt from it, instead of waiting out
 * the work queue's backoff for the same answer. The uid test still keeps it to the same object.
 */
async function guardedPatch<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  build: (current: T) => unknown[] | undefined,
  signal?: AbortSignal,
): Promise<T> {
  let current = object;
  for (let attempt = 0; ; attempt++) {
    const patch = build(current);
    if (patch === undefined) return current;
    try {
      return await client.patch<T>(
        gvr,
        current.metadata?.name ?? "",
        patch,
        { ...where(current), type: "json" },
        signal,
      );
    } catch (error) {
      if (apiStatusCode(error) !== 422 || attempt >= STALE_RETRIES) throw error;
      const fresh = await client
        .get<T>(gvr, current.metadata?.name ?? "", where(current), signal)
        .catch(() => undefined);
      if (fresh === undefined || fresh.metadata?.uid !== object.metadata?.uid) throw error;
      current = fresh;
    }
  }
}

/** Adds `name` unless present; returns the updated object (or the input when nothing changed). */
export async function addFinalizer<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  name: string,
  signal?: AbortSignal,
): Promise<T> {
  return guardedPatch(
    client,
    gvr,
    object,
    (current) => {
      if (hasFinalizer(current, name)) return undefined;
      const uidTest = { op: "test", path: "/metadata/uid", value: current.metadata?.uid };
      return current.metadata?.finalizers
        ? [uidTest, { op: "add", path: "/metadata/finalizers/-", value: name }]
        : [uidTest, { op: "add", path: "/metadata/finalizers", value: [name] }];
    },
    signal,
  );
}

/** Removes `name` if present (by index, guarded by a value test). */
export async function removeFinalizer<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  name: string,
  signal?: AbortSignal,
): Promise<T> {
  return guardedPatch(
    client,
    gvr,
    object,
    (current) => {
      const index = current.metadata?.finalizers?.indexOf(name) ?? -1;
      if (index < 0) return undefined;
      return [
        { op: "test", path: "/metadata/uid", value: current.metadata?.uid },
        { op: "test", path: `/metadata/finalizers/${index}`, value: name },
        { op: "remove", path: `/metadata/finalizers/${index}` },
      ];
    },
    signal,
  );
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
