// Upstream's PodControl for the loops that own pods (replicaset, daemonset, job): create or
// delete one pod and record the owner's SuccessfulCreate/FailedCreate/SuccessfulDelete/
// FailedDelete event. A failed delete is told to the expectations here (no watch event will
// come); what a failed create means for them depends on the caller's batching, so it stays there.

import { GVR, type Pod } from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import {
  isNotFound,
  objectKey,
  type EventRecorder,
  type KubeClient,
  type KubeObject,
} from "../../kube/index.ts";
import type { ControllerExpectations } from "./expectations.ts";

export const POD_CONTROL_EVENTS = Object.freeze({
  successfulCreate: "SuccessfulCreate",
  failedCreate: "FailedCreate",
  successfulDelete: "SuccessfulDelete",
  failedDelete: "FailedDelete",
});

export interface PodControlContext {
  client: KubeClient;
  recorder: EventRecorder;
  signal: AbortSignal;
  expectations: ControllerExpectations;
}

/** Creates `pod` for `owner`; a failure is recorded on the owner and rethrown. */
export async function createControlledPod(ctx: PodControlContext, owner: KubeObject, pod: Pod): Promise<Pod> {
  try {
    const created = await ctx.client.create<Pod>(GVR.pods, pod, ctx.signal);
    ctx.recorder.event(
      owner,
      "Normal",
      POD_CONTROL_EVENTS.successfulCreate,
      `Created pod: ${created.metadata?.name ?? ""}`,
    );
    return created;
  } catch (error) {
    ctx.recorder.event(
      owner,
      "Warning",
      POD_CONTROL_EVENTS.failedCreate,
      `Error creating: ${errorMessage(error)}`,
    );
    throw error;
  }
}

/** Deletes `owner`'s `pod`; one already gone is not an error. */
export async function deleteControlledPod(
  ctx: PodControlContext,
  owner: KubeObject,
  pod: Pod,
): Promise<void> {
  const name = pod.metadata?.name ?? "";
  try {
    await ctx.client.delete(GVR.pods, name, { namespace: pod.metadata?.namespace ?? "" }, ctx.signal);
    ctx.recorder.event(owner, "Normal", POD_CONTROL_EVENTS.successfulDelete, `Deleted pod: ${name}`);
  } catch (error) {
    ctx.expectations.deletionObserved(objectKey(owner), pod.metadata?.uid ?? "");
    if (isNotFound(error)) return;
    ctx.recorder.event(
      owner,
      "Warning",
      POD_CONTROL_EVENTS.failedDelete,
      `Error deleting: ${errorMessage(error)}`,
    );
    throw error;
  }
}
