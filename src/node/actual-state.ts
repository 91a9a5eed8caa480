// Actual state of the volume manager: what is staged (per volume) and published (per pod and
// volume) on this node, each "mounted" or "uncertain" (an operation may have half-happened: a
// timed-out call, or found on disk after a restart). Uncertain entries are driven again —
// mounted if still desired, torn down if not — which CSI idempotency makes safe.

export type MountState = "mounted" | "uncertain";

export interface StagedVolume {
  uniqueName: string;
  driver: string;
  handle: string;
  /** For block volumes the staging path is keyed by spec name. */
  specName: string;
  block: boolean;
  stagingPath: string;
  /** Whether NodeStageVolume was called (false for drivers without STAGE_UNSTAGE_VOLUME). */
  staged: boolean;
  state: MountState;
  /** CSI migration: the in-tree plugin the volume was translated from (kept across restarts). */
  migratedFrom?: string;
}

export interface PublishedVolume {
  /** "<podUID>/<specName>". */
  key: string;
  podUID: string;
  specName: string;
  uniqueName: string;
  driver: string;
  handle: string;
  block: boolean;
  targetPath: string;
  stagingPath: string;
  state: MountState;
  /** The claim, for expansion and stats (absent for inline and reconstructed volumes). */
  claim?: { namespace: string; name: string };
  /** The volume size last confirmed on the node (bytes), for expansion. */
  sizeBytes?: number;
  /** When NodePublishVolume last succeeded (clock ms), for requiresRepublish. */
  publishedAt?: number;
  /** CSI migration: the in-tree plugin the volume was translated from (kept across restarts). */
  migratedFrom?: string;
}

export class ActualState {
  readonly staged = new Map<string, StagedVolume>();
  readonly published = new Map<string, PublishedVolume>();

  publishedOfVolume(uniqueName: string): PublishedVolume[] {
    return [...this.published.values()].filter((p) => p.uniqueName === uniqueName);
  }

  publishedOfPod(podUID: string): PublishedVolume[] {
    return [...this.published.values()].filter((p) => p.podUID === podUID);
  }

  /** Unique names of every volume staged or published here. */
  inUse(): Set<string> {
    const names = new Set<string>(this.staged.keys());
    for (const published of this.published.values()) names.add(published.uniqueName);
    return names;
  }
}
