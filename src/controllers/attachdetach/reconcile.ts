// Reconciling one node (upstream's ADC reconciler + node status updater, per node): detaches
// first, then attaches, then reports.
//
// - Attach: a desired volume without its VolumeAttachment gets one (deterministic name, so a
//   stale cache or a second run cannot create two; an existing one is never modified). Attached
//   → reported in node.status.volumesAttached and a SuccessfulAttachVolume Event when we saw it
//   pending; attachError → FailedAttachVolume Event on the pods with the attacher's message (or,
//   with no answer after attachTimeout, upstream's "timed out waiting for external-attacher").
// - Detach: an attachment nothing needs is detached once the node no longer lists the volume in
//   status.volumesInUse, or — for a node that is not Ready (or gone) — once maxWaitForUnmount
//   has passed since the detach was first wanted; at once with the out-of-service taint. As
//   upstream, the volume leaves volumesAttached BEFORE the VolumeAttachment is deleted (so the
//   node stops trusting it), and the attachment is then deleted and left to the attacher.
// - Only nodes annotated volumes.kubernetes.io/controller-managed-attach-detach=true are
//   managed; others are left entirely to their kubelet.
// - CSI migration (desired.ts, migration.ts): migrated in-tree PVs get VolumeAttachments named
//   from their translated source, inline in-tree volumes ones with `spec.source.inlineVolumeSpec`;
//   a volume the node migrated but this controller may not is a FailedAttachVolume Event. The
//   seed's caveat — an in-tree detach must delete the VolumeAttachment a migrated attach would
//   have made — holds because every VolumeAttachment nothing wants in CSI form is detached.
// Memory is only for Events and the detach timer; after a restart the state is rebuilt from
// VolumeAttachments, pods and nodes, and anything nothing needs is detached.

import {
  ANNOTATIONS,
  EVENT_REASONS,
  GVR,
  type AttachedVolume,
  type Node,
  type VolumeAttachment,
} from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import {
  isAlreadyExists,
  isNotFound,
  type EventRecorder,
  type KubeClient,
  type ProcessResult,
} from "../../kube/index.ts";
import { desiredVolumes, type DesiredLookups, type DesiredProblem, type DesiredVolume } from "./desired.ts";
import { csiFormOfPV } from "./migration.ts";
import { attachMessage, uniqueVolumeName } from "./names.ts";

export const OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service";

export interface NodeReconcilerOptions {
  client: KubeClient;
  lookups: DesiredLookups & {
    node(name: string): Node | undefined;
    attachmentsOnNode(nodeName: string): readonly VolumeAttachment[];
  };
  recorder: EventRecorder;
  clock: Clock;
  /** Upstream maxWaitForUnmountDuration (6 minutes). */
  maxWaitForUnmountMs: number;
  /** How long to wait for the attacher before a FailedAttachVolume Event (upstream csiTimeout, 2 minutes). */
  attachTimeoutMs: number;
}

export function managedNode(node: Node | undefined): boolean {
  return node?.metadata?.annotations?.[ANNOTATIONS.controllerManagedAttachDetach.key] === "true";
}

function nodeHealthy(node: Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

function sameAttached(a: readonly AttachedVolume[], b: readonly AttachedVolume[]): boolean {
  if (a.length !== b.length) return false;
  const key = (v: AttachedVolume): string => `${v.name}\n${v.devicePath}`;
  const set = new Set(a.map(key));
  return b.every((v) => set.has(key(v)));
}

export class NodeReconciler {
  readonly #options: NodeReconcilerOptions;
  /** Node → attachment name → when its detach was first wanted (upstream's detachRequestedTime). */
  readonly #detachRequestedAtByNode = new Map<string, Map<string, number>>();
  /** Attachments seen not attached yet → since when (a later success gets an Event; a long wait one too). */
  readonly #pending = new Map<string, number>();
  /** Attachment name → attach error message already reported. */
  readonly #reportedErrors = new Map<string, string>();

  constructor(options: NodeReconcilerOptions) {
    this.#options = options;
  }

  async reconcile(nodeName: string, signal: AbortSignal, logger: Logger): Promise<ProcessResult | void> {
    const { lookups, clock } = this.#options;
    const node = lookups.node(nodeName);
    // A node that exists but is not ours is left to its kubelet; a vanished node's attachments
    // are still ours to clean up.
    if (node && !managedNode(node)) return;
    const problems: DesiredProblem[] = [];
    const desired = node ? desiredVolumes(nodeName, lookups, problems) : new Map<string, DesiredVolume>();
    this.#reportProblems(nodeName, problems);
    const attachments = new Map(
      lookups.attachmentsOnNode(nodeName).map((va) => [va.metadata?.name ?? "", va]),
    );
    const inUse = new Set(node?.status?.volumesInUse ?? []);
    const healthy = nodeHealthy(node);
    const outOfService = node?.spec?.taints?.some((t) => t.key === OUT_OF_SERVICE_TAINT) ?? false;
    const reported: AttachedVolume[] = [];
    const toDetach: VolumeAttachment[] = [];
    const toAttach: DesiredVolume[] = [];
    let requeueAfterMs: number | undefined;
    const now = clock.now();
    const detachRequestedAt = this.#detachRequestedAtByNode.get(nodeName) ?? new Map<string, number>();
    this.#detachRequestedAtByNode.set(nodeName, detachRequestedAt);

    for (const [name, attachment] of attachments) {
      if (desired.has(name)) continue;
      const source = attachment.spec?.source;
      if (!source?.persistentVolumeName && !source?.inlineVolumeSpec) continue;
      if (attachment.metadata?.deletionTimestamp) continue; // detaching: the attacher finishes it
      // The volume in CSI form: a CSI PV, an in-tree PV translated, or a migrated inline spec.
      const pv = source.persistentVolumeName ? lookups.volume(source.persistentVolumeName) : undefined;
      const csi = source.persistentVolumeName
        ? pv && csiFormOfPV(pv)?.spec?.csi
        : source.inlineVolumeSpec?.csi;
      // Without the PV or the node we cannot tell whether it is mounted: assume it is.
      const mounted = !node || !csi || inUse.has(uniqueVolumeName(csi.driver, csi.volumeHandle));
      const requestedAt = detachRequestedAt.get(name) ?? now;
      detachRequestedAt.set(name, requestedAt);
      const elapsed = now - requestedAt;
      const forced = elapsed >= this.#options.maxWaitForUnmountMs && !healthy;
      if (mounted && !forced && !outOfService) {
        if (attachment.status?.attached && csi) reported.push(attachedVolume(csi.driver, csi.volumeHandle));
        if (!healthy) requeueAfterMs = minDelay(requeueAfterMs, this.#options.maxWaitForUnmountMs - elapsed);
        logger.info(5, "volume still mounted, detach waits", { attachment: name });
        continue;
      }
      if (mounted)
        logger.warn("force-detaching a volume still in use: node not ready past the maximum wait", {
          attachment: name,
        });
      toDetach.push(attachment);
    }

    for (const [name, volume] of desired) {
      detachRequestedAt.delete(name);
      const attachment = attachments.get(name);
      if (!attachment) {
        toAttach.push(volume);
        continue;
      }
      if (attachment.metadata?.deletionTimestamp) {
        // Still detaching from an earlier use: attach again once it is gone (its delete event
        // brings us back).
        this.#markPending(name, now);
        continue;
      }
      if (attachment.status?.attached) {
        reported.push(attachedVolume(volume.driver, volume.volumeHandle));
        if (this.#pending.delete(name)) {
          for (const pod of volume.pods) {
            this.#options.recorder.event(
              pod,
              "Normal",
              EVENT_REASONS.successfulAttachVolume.key,
              attachMessage("AttachVolume.Attach succeeded", volume.specName),
            );
          }
        }
        this.#reportedErrors.delete(name);
        continue;
      }
      const waited = now - this.#markPending(name, now);
      let error = attachment.status?.attachError?.message;
      if (error === undefined && waited >= this.#options.attachTimeoutMs) {
        error = `timed out waiting for external-attacher of ${volume.driver} CSI driver to attach volume ${volume.volumeHandle}`;
      } else if (error === undefined) {
        requeueAfterMs = minDelay(requeueAfterMs, this.#options.attachTimeoutMs - waited);
      }
      if (error !== undefined && this.#reportedErrors.get(name) !== error) {
        this.#reportedErrors.set(name, error);
        for (const pod of volume.pods) {
          this.#options.recorder.event(
            pod,
            "Warning",
            EVENT_REASONS.failedAttachVolume.key,
            attachMessage("AttachVolume.Attach failed", volume.specName, error),
          );
        }
      }
    }

    // Upstream's order: the report drops what is about to be detached, detaches go before
    // attaches; independent writes go out together (a hundred new pods are not a hundred
    // sequential round trips).
    if (node) await this.#reportAttached(node, reported, signal);
    await Promise.all(toDetach.map((attachment) => this.#deleteAttachment(attachment, signal, logger)));
    await Promise.all(toAttach.map((volume) => this.#createAttachment(volume, nodeName, signal, logger)));
    for (const name of detachRequestedAt.keys()) if (!attachments.has(name)) detachRequestedAt.delete(name);
    if (detachRequestedAt.size === 0) this.#detachRequestedAtByNode.delete(nodeName);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  }

  /** Pod volume → problem already reported (each is an Event once, until it changes). */
  readonly #reportedProblems = new Map<string, string>();

  /** FailedAttachVolume Events for volumes the controller cannot attach (CSI migration skew). */
  #reportProblems(nodeName: string, problems: readonly DesiredProblem[]): void {
    const seen = new Set<string>();
    for (const { pod, volumeName, message } of problems) {
      const key = `${nodeName}/${pod.metadata?.uid ?? pod.metadata?.name ?? ""}/${volumeName}`;
      seen.add(key);
      if (this.#reportedProblems.get(key) === message) continue;
      this.#reportedProblems.set(key, message);
      this.#options.recorder.event(
        pod,
        "Warning",
        EVENT_REASONS.failedAttachVolume.key,
        attachMessage("AttachVolume.Attach failed", volumeName, message),
      );
    }
    for (const key of this.#reportedProblems.keys())
      if (key.startsWith(`${nodeName}/`) && !seen.has(key)) this.#reportedProblems.delete(key);
  }

  /** Remembers that the attachment is awaited; returns since when. */
  #markPending(name: string, now: number): number {
    const since = this.#pending.get(name) ?? now;
    this.#pending.set(name, since);
    return since;
  }

  async #createAttachment(
    volume: DesiredVolume,
    nodeName: string,
    signal: AbortSignal,
    logger: Logger,
  ): Promise<void> {
    const attachment: VolumeAttachment = {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttachment",
      metadata: { name: volume.attachmentName },
      spec: {
        attacher: volume.driver,
        // Exactly one of the two: a migrated inline volume has no PV.
        source: volume.inlineVolumeSpec
          ? { inlineVolumeSpec: volume.inlineVolumeSpec }
          : { persistentVolumeName: volume.persistentVolumeName },
        nodeName,
      },
    };
    try {
      await this.#options.client.create(GVR.volumeAttachments, attachment, signal);
      logger.info(2, "VolumeAttachment created", {
        attachment: volume.attachmentName,
        volume: volume.uniqueName,
      });
    } catch (error) {
      // Created earlier (a stale cache, a previous run): it is never modified.
      if (!isAlreadyExists(error)) throw error;
    }
    this.#markPending(volume.attachmentName, this.#options.clock.now());
  }

  /** Upstream's node status updater: a strategic merge patch of status.volumesAttached. */
  async #reportAttached(node: Node, attached: AttachedVolume[], signal: AbortSignal): Promise<void> {
    attached.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (sameAttached(node.status?.volumesAttached ?? [], attached)) return;
    await this.#options.client.patch(
      GVR.nodes,
      node.metadata?.name ?? "",
      { status: { volumesAttached: attached.length > 0 ? attached : null } },
      { subresource: "status", type: "strategic" },
      signal,
    );
  }

  async #deleteAttachment(attachment: VolumeAttachment, signal: AbortSignal, logger: Logger): Promise<void> {
    const name = attachment.metadata?.name ?? "";
    try {
      await this.#options.client.delete(
        GVR.volumeAttachments,
        name,
        attachment.metadata?.uid ? { preconditions: { uid: attachment.metadata.uid } } : {},
        signal,
      );
      logger.info(2, "VolumeAttachment deleted (detach)", { attachment: name });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    this.#pending.delete(name);
    this.#reportedErrors.delete(name);
  }
}

function attachedVolume(driver: string, volumeHandle: string): AttachedVolume {
  // The CSI attacher reports no device path.
  return { name: uniqueVolumeName(driver, volumeHandle), devicePath: "" };
}

function minDelay(current: number | undefined, next: number): number {
  const delay = Math.max(1, next);
  return current === undefined ? delay : Math.min(current, delay);
}
