// A claim's journey, read from the API objects alone (pure): provision → bind → schedule →
// attach → stage/publish → expand/modify/snapshot → unpublish/detach → delete. Each step is
// done, now (what the claim waits in), failed (red on the page, with the object's message), idle
// (not reached) or skipped (does not apply: no attach for a driver without attachRequired).
// `history` is what the dashboard saw before (a detach is known only by an attachment that was).

import type { PersistentVolume, PersistentVolumeClaim, Pod, VolumeAttachment } from "../api/index.ts";
import type { CoreEvent } from "../kube/index.ts";

export const STEPS = [
  "provision",
  "bind",
  "schedule",
  "attach",
  "publish",
  "expand",
  "modify",
  "snapshot",
  "unpublish",
  "detach",
  "delete",
] as const;
export type StepName = (typeof STEPS)[number];
export type StepState = "done" | "now" | "failed" | "idle" | "skipped";

export interface JourneyStep {
  step: StepName;
  state: StepState;
  /** One line: the object's own words (an attachError's message, an event's). */
  message?: string;
}

export interface ClaimRow {
  /** namespace/name */
  key: string;
  namespace: string;
  name: string;
  phase: string;
  storageClass: string;
  size: string;
  capacity: string;
  accessModes: string;
  volumeMode: string;
  volumeAttributesClass: string;
  volume: string;
  node: string;
  pods: string[];
  steps: JourneyStep[];
  /** The step it waits in now, or failed at; "" when everything it needs is done. */
  current: StepName | "";
  failed: boolean;
  deleted: boolean;
}

export interface SnapshotRef {
  name: string;
  ready: boolean;
  error?: string;
}

export interface JourneyInput {
  claim: PersistentVolumeClaim;
  pv: PersistentVolume | undefined;
  attachments: readonly VolumeAttachment[];
  pods: readonly Pod[];
  /** Events about the claim and its pods, oldest first. */
  events: readonly CoreEvent[];
  snapshots: readonly SnapshotRef[];
  /** false: the driver's CSIDriver says attachRequired=false (no VolumeAttachment is made). */
  attachRequired: boolean;
  history: ClaimHistory;
  deleted?: boolean;
}

/** What the dashboard remembers of a claim between updates. */
export interface ClaimHistory {
  attached?: boolean;
  published?: boolean;
  expanded?: boolean;
  modified?: boolean;
}

const FAILED_REASONS: Record<string, StepName> = {
  ProvisioningFailed: "provision",
  FailedScheduling: "schedule",
  FailedAttachVolume: "attach",
  FailedMount: "publish",
  FailedMapVolume: "publish",
  VolumeResizeFailed: "expand",
  FileSystemResizeFailed: "expand",
  VolumeModifyFailed: "modify",
  FailedDetachVolume: "detach",
  VolumeFailedDelete: "delete",
};

function quantityBytes(text: string | undefined): number {
  if (!text) return 0;
  const match = /^([0-9.]+)([KMGTPE]i?|[kmMGTPE])?$/.exec(text);
  if (!match) return 0;
  const units: Record<string, number> = {
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    Pi: 2 ** 50,
    Ei: 2 ** 60,
    k: 1e3,
    K: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    P: 1e15,
    E: 1e18,
  };
  return Number(match[1]) * (match[2] ? (units[match[2]] ?? 1) : 1);
}

/** The last warning event naming a step, newer than the given time (ISO), if any. */
function lastFailure(events: readonly CoreEvent[], step: StepName): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === "Warning" && FAILED_REASONS[event.reason] === step) return event.message;
  }
  return undefined;
}

function hasEvent(events: readonly CoreEvent[], reasons: readonly string[]): boolean {
  return events.some((event) => reasons.includes(event.reason));
}

function podReady(pod: Pod): boolean {
  return (
    pod.status?.phase === "Running" &&
    (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}

export function journey(input: JourneyInput): ClaimRow {
  const { claim, pv, events, history } = input;
  const namespace = claim.metadata?.namespace ?? "";
  const name = claim.metadata?.name ?? "";
  const steps = new Map<StepName, JourneyStep>(STEPS.map((step) => [step, { step, state: "idle" }]));
  const set = (step: StepName, state: StepState, message?: string): void =>
    void steps.set(step, { step, state, ...(message ? { message } : {}) });
  const bound = claim.status?.phase === "Bound";
  const live = input.pods.filter((pod) => !pod.metadata?.deletionTimestamp);
  const scheduled = live.find((pod) => pod.spec?.nodeName);
  const node = scheduled?.spec?.nodeName ?? "";

  // provision / bind
  if (pv || claim.spec?.volumeName) set("provision", "done");
  else {
    const failure = lastFailure(events, "provision");
    if (failure) set("provision", "failed", failure);
    else if (live.length === 0 && hasEvent(events, ["WaitForFirstConsumer"]))
      set("provision", "now", "waiting for a pod to use it (WaitForFirstConsumer)");
    else set("provision", "now", "waiting for the provisioner (CreateVolume)");
  }
  if (bound) set("bind", "done");
  else if (claim.status?.phase === "Lost") set("bind", "failed", "claim Lost: its volume is gone");
  else if (pv || claim.spec?.volumeName) set("bind", "now", "waiting for the binder");

  // schedule
  if (scheduled) set("schedule", "done", `on ${node}`);
  else if (live.length > 0) {
    const failure = lastFailure(events, "schedule");
    set("schedule", failure ? "failed" : "now", failure ?? "pod not yet placed on a node");
  }

  // attach
  const attachment = input.attachments.find((va) => !node || va.spec.nodeName === node);
  if (!input.attachRequired) set("attach", "skipped", "the CSIDriver needs no attach");
  else if (attachment?.status?.attachError)
    set("attach", "failed", attachment.status.attachError.message ?? "attach error");
  else if (attachment?.status?.attached && !attachment.metadata?.deletionTimestamp) set("attach", "done");
  else if (attachment && !attachment.metadata?.deletionTimestamp)
    set("attach", "now", `waiting for ControllerPublishVolume on ${attachment.spec.nodeName}`);
  else if (scheduled && bound) {
    const failure = lastFailure(events, "attach");
    set("attach", failure ? "failed" : "now", failure ?? "waiting for a VolumeAttachment");
  }

  // stage / publish: the pod's own view (its readiness, or the kubelet's FailedMount)
  const ready = live.find(podReady);
  if (ready) set("publish", "done", `pod ${ready.metadata?.name} running`);
  else if (scheduled && (steps.get("attach")!.state === "done" || !input.attachRequired)) {
    const failure = lastFailure(events, "publish");
    set("publish", failure ? "failed" : "now", failure ?? "waiting for NodeStage/NodePublish");
  }

  // expand: requested beyond capacity, or a resize condition / status in progress
  const requested = quantityBytes(claim.spec?.resources?.requests?.storage);
  const capacity = quantityBytes(claim.status?.capacity?.storage);
  const resizeStatus = Object.values(claim.status?.allocatedResourceStatuses ?? {})[0];
  if (bound && capacity > 0 && requested > capacity) {
    const failure = lastFailure(events, "expand");
    const infeasible = resizeStatus?.includes("Infeasible");
    set(
      "expand",
      failure || infeasible ? "failed" : "now",
      failure ?? (resizeStatus ? `resize ${resizeStatus}` : "waiting for ControllerExpandVolume"),
    );
  } else if (history.expanded || hasEvent(events, ["FileSystemResizeSuccessful", "VolumeResizeSuccessful"]))
    set("expand", "done");

  // modify: the VolumeAttributesClass asked for, against the one in effect
  const wantedClass = claim.spec?.volumeAttributesClassName ?? "";
  const currentClass = claim.status?.currentVolumeAttributesClassName ?? "";
  if (bound && wantedClass !== "" && wantedClass !== currentClass) {
    const status = claim.status?.modifyVolumeStatus?.status ?? "";
    const failure = lastFailure(events, "modify");
    set(
      "modify",
      status === "Infeasible" || failure ? "failed" : "now",
      failure ?? `modify to ${wantedClass}${status ? ` (${status})` : ""}`,
    );
  } else if (history.modified || (currentClass !== "" && wantedClass === currentClass)) set("modify", "done");

  // snapshot
  if (input.snapshots.length > 0) {
    const broken = input.snapshots.find((s) => s.error);
    const pending = input.snapshots.find((s) => !s.ready);
    if (broken) set("snapshot", "failed", `${broken.name}: ${broken.error}`);
    else if (pending) set("snapshot", "now", `${pending.name} not ready`);
    else set("snapshot", "done", input.snapshots.map((s) => s.name).join(", "));
  }

  // unpublish / detach: only after the volume was used
  const terminating = input.pods.find((pod) => pod.metadata?.deletionTimestamp);
  if (terminating) set("unpublish", "now", `pod ${terminating.metadata?.name} terminating`);
  else if (history.published && !ready) set("unpublish", "done");
  const detaching = input.attachments.find((va) => va.metadata?.deletionTimestamp);
  if (detaching?.status?.detachError)
    set("detach", "failed", detaching.status.detachError.message ?? "detach error");
  else if (detaching)
    set("detach", "now", `waiting for ControllerUnpublishVolume on ${detaching.spec.nodeName}`);
  else if (history.attached && input.attachments.length === 0) set("detach", "done");

  // delete
  if (input.deleted) set("delete", "done");
  else if (claim.metadata?.deletionTimestamp) {
    const failure = lastFailure(events, "delete");
    set(
      "delete",
      failure ? "failed" : "now",
      failure ?? (live.length > 0 ? "in use by a pod (pvc-protection)" : "waiting for its finalizers"),
    );
  }

  const list = STEPS.map((step) => steps.get(step)!);
  const failed = list.find((s) => s.state === "failed");
  const waiting = list.find((s) => s.state === "now");
  return {
    key: `${namespace}/${name}`,
    namespace,
    name,
    phase: input.deleted
      ? "Deleted"
      : claim.metadata?.deletionTimestamp
        ? "Terminating"
        : (claim.status?.phase ?? "Pending"),
    storageClass: claim.spec?.storageClassName ?? "",
    size: claim.spec?.resources?.requests?.storage ?? "",
    capacity: claim.status?.capacity?.storage ?? "",
    accessModes: (claim.spec?.accessModes ?? []).join(","),
    volumeMode: claim.spec?.volumeMode ?? "Filesystem",
    volumeAttributesClass: wantedClass,
    volume: pv?.metadata?.name ?? claim.spec?.volumeName ?? "",
    node,
    pods: input.pods.map((pod) => pod.metadata?.name ?? ""),
    steps: list,
    current: (failed ?? waiting)?.step ?? "",
    failed: failed !== undefined,
    deleted: input.deleted ?? false,
  };
}

/** History after this row: what it has seen done. */
export function nextHistory(history: ClaimHistory, row: ClaimRow): ClaimHistory {
  const state = (step: StepName) => row.steps.find((s) => s.step === step)?.state;
  return {
    attached: history.attached || state("attach") === "done",
    published: history.published || state("publish") === "done",
    // A resize seen under way and no longer asked for is done.
    expanded: history.expanded || state("expand") === "done" || state("expand") === "now",
    modified: history.modified || state("modify") === "done" || state("modify") === "now",
  };
}
