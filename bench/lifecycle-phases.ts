// Where the time of a claim + pod goes, for `npm run bench:lifecycle`: watches claims, volumes,
// VolumeAttachments and pods and records when each step of each claim was first seen (client
// side, performance.now; the API objects' own timestamps have one-second resolution), then
// prints p50/p99 of every step's share (claim created → selected-node → handed to the
// provisioner → provisioned → bound → scheduled → VolumeAttachment → attached → Running; pod
// deleted → pod gone → VA deleted → VA gone; claim deleted → PV released → PV gone). Staging
// and publishing happen between "attached" and "Running": no API object records them separately.
// The PV binder's bind is split into its writes as they become visible (PV phase Bound, claim
// volumeName, claim phase Bound): the first includes the binder's queue wait, the others are
// one write round trip plus watch delivery each.

import {
  ANNOTATIONS,
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
} from "../src/api/index.ts";
import { InformerFactory, deletedObject, type KubeClient } from "../src/kube/index.ts";
import { percentile } from "./stats.ts";

/** Steps in order; each is measured from the step before it that was seen. */
export const CREATE_STEPS = [
  "created",
  "selected-node",
  "provisioner annotated",
  "provisioned (PV)",
  "PV phase Bound",
  "claim volumeName",
  "claim bound",
  "pod scheduled",
  "VA created",
  "VA attached",
  "pod Running",
] as const;
export const DELETE_STEPS = ["pod delete", "pod gone", "VA deleting", "VA gone"] as const;
export const RECLAIM_STEPS = ["claim delete", "PV released", "PV gone"] as const;
type Step = (typeof CREATE_STEPS)[number] | (typeof DELETE_STEPS)[number] | (typeof RECLAIM_STEPS)[number];

export class PhaseRecorder {
  /** claim name → step → ms. Pods and claims share their name in the bench. */
  readonly #marks = new Map<string, Map<Step, number>>();
  /** PV name → claim name. */
  readonly #volumes = new Map<string, string>();
  readonly #factory: InformerFactory;

  constructor(client: KubeClient) {
    this.#factory = new InformerFactory({ client });
    const claims = this.#factory.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
    const volumes = this.#factory.informer<PersistentVolume>(GVR.persistentVolumes);
    const attachments = this.#factory.informer<VolumeAttachment>(GVR.volumeAttachments);
    const pods = this.#factory.informer<Pod>(GVR.pods);
    const name = (o: { metadata?: { name?: string } }): string => o.metadata?.name ?? "";
    const onClaim = (claim: PersistentVolumeClaim): void => {
      if (claim.metadata?.annotations?.[ANNOTATIONS.selectedNode.key])
        this.mark(name(claim), "selected-node");
      if (claim.metadata?.annotations?.[ANNOTATIONS.storageProvisioner.key])
        this.mark(name(claim), "provisioner annotated");
      if (claim.spec?.volumeName) this.mark(name(claim), "claim volumeName");
      if (claim.status?.phase === "Bound") this.mark(name(claim), "claim bound");
    };
    claims.addEventHandler({ onAdd: onClaim, onUpdate: (_, claim) => onClaim(claim) });
    const onVolume = (volume: PersistentVolume): void => {
      const claim = volume.spec?.claimRef?.name;
      if (!claim) return;
      this.#volumes.set(name(volume), claim);
      this.mark(claim, "provisioned (PV)");
      if (volume.status?.phase === "Bound") this.mark(claim, "PV phase Bound");
      if (volume.status?.phase === "Released") this.mark(claim, "PV released");
    };
    volumes.addEventHandler({
      onAdd: onVolume,
      onUpdate: (_, volume) => onVolume(volume),
      onDelete: (value) => {
        const claim = deletedObject(value).spec?.claimRef?.name;
        if (claim) this.mark(claim, "PV gone");
      },
    });
    const claimOf = (va: VolumeAttachment): string | undefined =>
      this.#volumes.get(va.spec?.source?.persistentVolumeName ?? "");
    const onAttachment = (va: VolumeAttachment): void => {
      const claim = claimOf(va);
      if (!claim) return;
      this.mark(claim, "VA created");
      if (va.status?.attached) this.mark(claim, "VA attached");
      if (va.metadata?.deletionTimestamp) this.mark(claim, "VA deleting");
    };
    attachments.addEventHandler({
      onAdd: onAttachment,
      onUpdate: (_, va) => onAttachment(va),
      onDelete: (value) => {
        const claim = claimOf(deletedObject(value));
        if (claim) this.mark(claim, "VA gone");
      },
    });
    const onPod = (pod: Pod): void => {
      if (pod.spec?.nodeName) this.mark(name(pod), "pod scheduled");
      if (pod.status?.phase === "Running") this.mark(name(pod), "pod Running");
    };
    pods.addEventHandler({
      onAdd: onPod,
      onUpdate: (_, pod) => onPod(pod),
      onDelete: (value) => this.mark(name(deletedObject(value)), "pod gone"),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    this.#factory.start(signal).catch(() => {});
    await this.#factory.waitForCacheSync(signal);
  }

  /** Records a step the first time it is seen (the bench marks "created" and the deletes). */
  mark(claim: string, step: Step, at = performance.now()): void {
    let steps = this.#marks.get(claim);
    if (!steps) this.#marks.set(claim, (steps = new Map()));
    if (!steps.has(step)) steps.set(step, at);
  }

  /** Markdown table: per step, how many claims saw it and p50/p99 of the time since the previous seen step. */
  table(prefix: string): string {
    const rows: string[] = ["| step (since the step before) | n | p50 ms | p99 ms |", "|---|--:|--:|--:|"];
    for (const steps of [CREATE_STEPS, DELETE_STEPS, RECLAIM_STEPS] as readonly (readonly Step[])[]) {
      for (let i = 1; i < steps.length; i++) {
        const samples: number[] = [];
        for (const [claim, marks] of this.#marks) {
          if (!claim.startsWith(prefix)) continue;
          const at = marks.get(steps[i]!);
          if (at === undefined) continue;
          // The latest earlier step seen (watch events of different kinds may arrive out of order).
          const earlier = steps
            .slice(0, i)
            .map((s) => marks.get(s))
            .filter((t): t is number => t !== undefined);
          if (earlier.length > 0) samples.push(Math.max(0, at - Math.max(...earlier)));
        }
        samples.sort((a, b) => a - b);
        const cell = (p: number): string => (samples.length ? percentile(samples, p).toFixed(0) : "-");
        rows.push(`| ${steps[i - 1]} → ${steps[i]} | ${samples.length} | ${cell(50)} | ${cell(99)} |`);
      }
    }
    return rows.join("\n");
  }
}
