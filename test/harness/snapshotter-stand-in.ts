// TEST STAND-IN of the upstream-behaving csi-snapshotter sidecar (external-snapshotter v8.6's
// sidecar controller), so the snapshot controller is proven against upstream's contract before
// the real `csikit snapshotter` is merged. It polls (every 25 ms) the contents of one driver and
// writes what the sidecar writes:
//   - a dynamic content without a handle: a "backend snapshot" is cut (kept in `backend`) and
//     status {snapshotHandle, creationTime (ns), restoreSize, readyToUse} is written;
//   - a pre-provisioned content without status: status {snapshotHandle, readyToUse, restoreSize};
//   - a content being deleted: deletionPolicy Delete → the backend snapshot is deleted; then the
//     volumesnapshotcontent-bound-protection finalizer is removed (Retain: only the finalizer);
//   - group contents likewise (status.volumeSnapshotInfoList, group handle); a member content
//     (annotation groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle) is never cut on its own
//     and only loses its finalizer on deletion, as upstream's sidecar.
// `ready` false holds snapshots cut but not ready. It is not the sidecar; replace it with the
// real one in end-to-end tests.

import {
  FINALIZERS,
  GVR,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshotContent,
} from "../../src/api/index.ts";
import { errorMessage } from "../../src/base/index.ts";
import { isConflict, isNotFound, type KubeClient } from "../../src/kube/index.ts";

export interface SnapshotterStandIn {
  /** Live backend snapshots by handle (value: the source volume handle, "" when pre-provisioned). */
  backend: Map<string, string>;
  /** Every backend snapshot ever cut. */
  cut: string[];
  /** Whether newly cut snapshots are ready. Default true. */
  ready: boolean;
  errors: string[];
  stop(): Promise<void>;
}

const CONTENT_FINALIZER = FINALIZERS.volumeSnapshotContentBound.key;
const GROUP_CONTENT_FINALIZER = FINALIZERS.volumeGroupSnapshotContentBound.key;
const SIZE = 1024 * 1024;

export function startSnapshotterStandIn(options: {
  client: KubeClient;
  driver: string;
  groups?: boolean;
}): SnapshotterStandIn {
  const { client, driver } = options;
  const controller = new AbortController();
  const standIn: Omit<SnapshotterStandIn, "stop"> = { backend: new Map(), cut: [], ready: true, errors: [] };
  const nanosNow = (): number => Date.now() * 1_000_000;

  const syncContent = async (content: VolumeSnapshotContent): Promise<void> => {
    if (content.spec.driver !== driver) return;
    const name = content.metadata?.name ?? "";
    // A group member: the snapshot controller seeds its status; the group's deletion deletes its backend snapshot.
    const member =
      content.metadata?.annotations?.["groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle"] !== undefined;
    if (content.metadata?.deletionTimestamp) {
      const handle = content.status?.snapshotHandle ?? content.spec.source.snapshotHandle;
      const beingDeleted =
        content.metadata.annotations?.["snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"] ===
          "yes" || !content.spec.volumeSnapshotRef.uid;
      if (content.spec.deletionPolicy === "Delete" && beingDeleted && handle && !member)
        standIn.backend.delete(handle);
      const finalizers = (content.metadata.finalizers ?? []).filter((f) => f !== CONTENT_FINALIZER);
      if (finalizers.length !== (content.metadata.finalizers ?? []).length)
        await client.update(GVR.volumeSnapshotContents, {
          ...content,
          metadata: { ...content.metadata, finalizers },
        });
      return;
    }
    if (content.status?.snapshotHandle) {
      if (content.status.readyToUse !== true && standIn.ready)
        await client.updateStatus(GVR.volumeSnapshotContents, {
          ...content,
          status: { ...content.status, readyToUse: true },
        });
      return;
    }
    if (member) return;
    if (content.spec.source.volumeHandle) {
      const handle = `snap-${content.metadata?.uid ?? name}`;
      if (!standIn.backend.has(handle)) {
        standIn.backend.set(handle, content.spec.source.volumeHandle);
        standIn.cut.push(handle);
      }
      await client.updateStatus(GVR.volumeSnapshotContents, {
        ...content,
        status: {
          snapshotHandle: handle,
          creationTime: nanosNow(),
          restoreSize: SIZE,
          readyToUse: standIn.ready,
        },
      });
    } else if (content.spec.source.snapshotHandle) {
      await client.updateStatus(GVR.volumeSnapshotContents, {
        ...content,
        status: { snapshotHandle: content.spec.source.snapshotHandle, readyToUse: true, restoreSize: SIZE },
      });
    }
  };

  const syncGroupContent = async (content: VolumeGroupSnapshotContent): Promise<void> => {
    if (content.spec.driver !== driver) return;
    if (content.metadata?.deletionTimestamp) {
      const handle = content.status?.volumeGroupSnapshotHandle;
      if (content.spec.deletionPolicy === "Delete" && handle) {
        standIn.backend.delete(handle);
        for (const member of content.status?.volumeSnapshotInfoList ?? [])
          if (member.snapshotHandle) standIn.backend.delete(member.snapshotHandle);
      }
      const finalizers = (content.metadata.finalizers ?? []).filter((f) => f !== GROUP_CONTENT_FINALIZER);
      if (finalizers.length !== (content.metadata.finalizers ?? []).length)
        await client.update(GVR.volumeGroupSnapshotContents, {
          ...content,
          metadata: { ...content.metadata, finalizers },
        });
      return;
    }
    if (content.status?.volumeGroupSnapshotHandle || !content.spec.source.volumeHandles) return;
    const groupHandle = `groupsnap-${content.metadata?.uid ?? ""}`;
    standIn.backend.set(groupHandle, "");
    const created = nanosNow();
    const members = content.spec.source.volumeHandles.map((volumeHandle) => {
      const snapshotHandle = `${groupHandle}-${volumeHandle}`;
      standIn.backend.set(snapshotHandle, volumeHandle);
      standIn.cut.push(snapshotHandle);
      return { volumeHandle, snapshotHandle, creationTime: created, readyToUse: true, restoreSize: SIZE };
    });
    await client.updateStatus(GVR.volumeGroupSnapshotContents, {
      ...content,
      status: {
        volumeGroupSnapshotHandle: groupHandle,
        creationTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
        readyToUse: true,
        volumeSnapshotInfoList: members,
      },
    });
  };

  const done = (async () => {
    while (!controller.signal.aborted) {
      try {
        for (const content of (await client.list<VolumeSnapshotContent>(GVR.volumeSnapshotContents)).items)
          await syncContent(content).catch((error: unknown) => {
            if (!isConflict(error) && !isNotFound(error)) throw error;
          });
        if (options.groups)
          for (const content of (
            await client.list<VolumeGroupSnapshotContent>(GVR.volumeGroupSnapshotContents)
          ).items)
            await syncGroupContent(content).catch((error: unknown) => {
              if (!isConflict(error) && !isNotFound(error)) throw error;
            });
      } catch (error) {
        if (!controller.signal.aborted) standIn.errors.push(errorMessage(error));
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return Object.assign(standIn, {
    stop: async () => {
      controller.abort();
      await done;
    },
  });
}
