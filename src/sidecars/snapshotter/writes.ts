// The snapshotter's writes to contents, shared by both kinds (VolumeSnapshotContent and
// VolumeGroupSnapshotContent): the being-created guard annotation set and removed, the
// bound-protection finalizer removed, and status patches. Metadata changes are merge patches
// carrying the resourceVersion they were decided on (a conflict retries from a fresh cache, so
// a finalizer another controller just added is never dropped); status patches go to the status
// subresource decided on the server's copy of the object, as upstream re-reads it there: the
// answer to our own write just before is that copy (patchStatusFromServer), saving the read.
// A write that fails is reported with upstream's "snapshot controller failed to update" text.

import type { GroupVersionResource, KubeResource } from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import { isConflict, type KubeClient } from "../../kube/index.ts";
import { CONTROLLER_UPDATE_FAIL_MSG } from "./names.ts";

export class ControllerUpdateError extends Error {
  constructor(name: string, cause: unknown) {
    super(`${CONTROLLER_UPDATE_FAIL_MSG} ${name} on API server: ${errorMessage(cause)}`, { cause });
    this.name = "ControllerUpdateError";
  }
}

async function patchMetadata<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  metadata: Record<string, unknown>,
  signal: AbortSignal,
): Promise<T> {
  try {
    return await client.patch<T>(
      gvr,
      object.metadata.name!,
      { metadata: { resourceVersion: object.metadata.resourceVersion, ...metadata } },
      { type: "merge" },
      signal,
    );
  } catch (error) {
    throw new ControllerUpdateError(object.metadata.name!, error);
  }
}

/** Sets `annotation: "yes"` (the intent) unless it is there. */
export async function setAnnotation<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  annotation: string,
  signal: AbortSignal,
): Promise<T> {
  if (object.metadata.annotations?.[annotation] !== undefined) return object;
  return patchMetadata(client, gvr, object, { annotations: { [annotation]: "yes" } }, signal);
}

export async function removeAnnotation<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  annotation: string,
  signal: AbortSignal,
): Promise<T> {
  if (object.metadata.annotations?.[annotation] === undefined) return object;
  return patchMetadata(client, gvr, object, { annotations: { [annotation]: null } }, signal);
}

export async function removeFinalizer<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  finalizer: string,
  signal: AbortSignal,
): Promise<T> {
  const finalizers = object.metadata.finalizers ?? [];
  if (!finalizers.includes(finalizer)) return object;
  return patchMetadata(
    client,
    gvr,
    object,
    { finalizers: finalizers.filter((f) => f !== finalizer) },
    signal,
  );
}

/** The object as the server has it now (upstream reads it there before each status write). */
export async function getFresh<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionResource,
  name: string,
  signal: AbortSignal,
): Promise<T> {
  try {
    return await client.get<T>(gvr, name, {}, signal);
  } catch (error) {
    throw new Error(`error get snapshot content ${name} from api server: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}

/**
 * Merge-patches the status subresource (null clears a field), on the version `object` is unless
 * `anyVersion` (fields that are right whatever else changed, as upstream's error patch).
 */
export async function patchStatus<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionResource,
  object: T,
  status: Record<string, unknown>,
  signal: AbortSignal,
  anyVersion = false,
): Promise<T> {
  const metadata = anyVersion ? {} : { metadata: { resourceVersion: object.metadata.resourceVersion } };
  try {
    return await client.patch<T>(
      gvr,
      object.metadata.name!,
      { ...metadata, status },
      { type: "merge", subresource: "status" },
      signal,
    );
  } catch (error) {
    throw new ControllerUpdateError(object.metadata.name!, error);
  }
}

/**
 * A status patch decided on the server's copy of the object and written on that version.
 * `known` is a copy the server itself just answered with (the response to this sidecar's own
 * write), or undefined: the object is read first, as upstream does before each status write.
 * When someone wrote in between, the guarded patch conflicts and the decision is made once more
 * on a fresh read, so no field another writer set is overwritten and no conflict surfaces as
 * an error status. `decide` returns the fields to patch, or undefined when there are none.
 */
export async function patchStatusFromServer<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionResource,
  name: string,
  known: T | undefined,
  decide: (fresh: T) => Record<string, unknown> | undefined,
  signal: AbortSignal,
): Promise<T> {
  const write = async (fresh: T): Promise<T> => {
    const status = decide(fresh);
    return status === undefined ? fresh : patchStatus(client, gvr, fresh, status, signal);
  };
  if (known === undefined) return write(await getFresh<T>(client, gvr, name, signal));
  try {
    return await write(known);
  } catch (error) {
    if (!(error instanceof ControllerUpdateError && isConflict(error.cause))) throw error;
    return write(await getFresh<T>(client, gvr, name, signal));
  }
}
