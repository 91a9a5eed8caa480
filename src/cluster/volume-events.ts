// The one-line-per-step log `csikit up` prints while it runs: a claim bound, a volume
// provisioned, attached, a pod's volumes staged and published (the pod Running), torn down, a
// volume detached and deleted, each with how long the step took since the step before it was
// seen. Everything comes from watches on the API server, like any other client's view.

import {
  ANNOTATIONS,
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
} from "../api/index.ts";
import { InformerFactory, deletedObject, type KubeClient } from "../kube/index.ts";

export interface VolumeEventOptions {
  client: KubeClient;
  driverName: string;
  /** Prints one line. */
  print: (line: string) => void;
  /** Monotonic ms. Default performance.now. */
  now?: () => number;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}

function key(object: { metadata?: { namespace?: string; name?: string } }): string {
  const meta = object.metadata ?? {};
  return meta.namespace ? `${meta.namespace}/${meta.name}` : (meta.name ?? "");
}

/** Starts the watches; resolves once they have synced (objects that exist are not reported). */
export async function watchVolumeEvents(options: VolumeEventOptions, signal: AbortSignal): Promise<void> {
  const now = options.now ?? (() => performance.now());
  const { print, driverName } = options;
  const factory = new InformerFactory({ client: options.client });
  const claims = factory.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const volumes = factory.informer<PersistentVolume>(GVR.persistentVolumes);
  const attachments = factory.informer<VolumeAttachment>(GVR.volumeAttachments);
  const pods = factory.informer<Pod>(GVR.pods);
  /** When each object (by kind/key) was first seen, or its last step happened. */
  const marks = new Map<string, number>();
  let synced = false;
  const since = (mark: string, reset = true): string => {
    const at = marks.get(mark);
    const t = now();
    if (reset) marks.set(mark, t);
    return at === undefined ? "" : `  (${seconds(t - at)})`;
  };
  const seen = (mark: string): void => {
    if (synced && !marks.has(mark)) marks.set(mark, now());
  };

  claims.addEventHandler({
    onAdd: (claim) => seen(`pvc:${key(claim)}`),
    onUpdate: (old, claim) => {
      if (old.status?.phase !== "Bound" && claim.status?.phase === "Bound")
        print(`claim ${key(claim)} bound to ${claim.spec?.volumeName}${since(`pvc:${key(claim)}`)}`);
    },
    onDelete: (value) => {
      const claim = deletedObject(value);
      marks.delete(`pvc:${key(claim)}`);
      print(`claim ${key(claim)} deleted`);
    },
  });
  volumes.addEventHandler({
    onAdd: (volume) => {
      if (!synced || volume.spec?.csi?.driver !== driverName) return;
      const claimRef = volume.spec.claimRef;
      const claim = claimRef ? `${claimRef.namespace}/${claimRef.name}` : "";
      marks.set(`pv:${key(volume)}`, now());
      const provisioner = volume.metadata?.annotations?.[ANNOTATIONS.provisionedBy.key];
      print(
        `volume ${key(volume)} ${provisioner ? "provisioned" : "created"} for ${claim} (${volume.spec.capacity?.storage ?? "?"})${since(`pvc:${claim}`, false)}`,
      );
    },
    onUpdate: (old, volume) => {
      if (volume.spec?.csi?.driver !== driverName) return;
      if (!old.metadata?.deletionTimestamp && volume.metadata?.deletionTimestamp)
        marks.set(`pv:${key(volume)}`, now());
      if (old.status?.phase !== "Released" && volume.status?.phase === "Released")
        print(`volume ${key(volume)} released${since(`pv:${key(volume)}`)}`);
    },
    onDelete: (value) => {
      const volume = deletedObject(value);
      if (volume.spec?.csi?.driver !== driverName) return;
      print(`volume ${key(volume)} deleted (DeleteVolume done, PV gone)${since(`pv:${key(volume)}`)}`);
      marks.delete(`pv:${key(volume)}`);
    },
  });
  attachments.addEventHandler({
    onAdd: (attachment) => seen(`va:${key(attachment)}`),
    onUpdate: (old, attachment) => {
      const volume = attachment.spec?.source?.persistentVolumeName ?? "inline volume";
      if (!old.status?.attached && attachment.status?.attached)
        print(`volume ${volume} attached to ${attachment.spec?.nodeName}${since(`va:${key(attachment)}`)}`);
      const error = attachment.status?.attachError?.message;
      if (error && error !== old.status?.attachError?.message)
        print(`volume ${volume} attach to ${attachment.spec?.nodeName} failed: ${error}`);
      if (!old.metadata?.deletionTimestamp && attachment.metadata?.deletionTimestamp)
        marks.set(`va:${key(attachment)}`, now());
    },
    onDelete: (value) => {
      const attachment = deletedObject(value);
      const volume = attachment.spec?.source?.persistentVolumeName ?? "inline volume";
      print(`volume ${volume} detached from ${attachment.spec?.nodeName}${since(`va:${key(attachment)}`)}`);
      marks.delete(`va:${key(attachment)}`);
    },
  });
  pods.addEventHandler({
    onAdd: (pod) => seen(`pod:${key(pod)}`),
    onUpdate: (old, pod) => {
      if (!old.spec?.nodeName && pod.spec?.nodeName)
        print(`pod ${key(pod)} scheduled to ${pod.spec.nodeName}${since(`pod:${key(pod)}`)}`);
      if (old.status?.phase !== "Running" && pod.status?.phase === "Running")
        print(
          `pod ${key(pod)} Running on ${pod.spec?.nodeName}: volumes staged and published${since(`pod:${key(pod)}`)}`,
        );
      if (!old.metadata?.deletionTimestamp && pod.metadata?.deletionTimestamp)
        marks.set(`pod:${key(pod)}`, now());
      if (old.status?.phase === "Running" && pod.status?.phase === "Failed")
        marks.set(`pod:${key(pod)}`, now());
    },
    onDelete: (value) => {
      const pod = deletedObject(value);
      print(`pod ${key(pod)} gone: volumes unpublished and unstaged${since(`pod:${key(pod)}`)}`);
      marks.delete(`pod:${key(pod)}`);
    },
  });
  factory.start(signal).catch(() => {});
  await factory.waitForCacheSync(signal);
  synced = true;
}
