// The attacher's pure parts, table-tested: the volume capability from a PV spec, the VA
// source rules and which updates are worth a sync.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { PersistentVolume, PersistentVolumeSpec, VolumeAttachment } from "../../api/index.ts";
import { silentLogger } from "../../base/index.ts";
import { Store, WorkQueue } from "../../kube/index.ts";
import { attachmentChangeMatters } from "./changes.ts";
import { AttachmentLanes } from "./lanes.ts";
import { isSuperseded, noteSuperseded, type AttacherContext } from "./context.ts";
import { attachmentVolume, volumeCapability } from "./volume-source.ts";

const csi = { driver: "d", volumeHandle: "h" };

test("volumeCapability: block vs mount, fsType default, mount flags, access modes", () => {
  const cases: [PersistentVolumeSpec, boolean, string, unknown][] = [
    [
      { csi, accessModes: ["ReadWriteOnce"] },
      false,
      "",
      { mount: { fsType: "", mountFlags: [] }, accessMode: { mode: "SINGLE_NODE_WRITER" } },
    ],
    [
      { csi, accessModes: ["ReadWriteOnce"] },
      true,
      "ext4",
      { mount: { fsType: "ext4", mountFlags: [] }, accessMode: { mode: "SINGLE_NODE_MULTI_WRITER" } },
    ],
    [
      { csi: { ...csi, fsType: "xfs" }, accessModes: ["ReadWriteOncePod"], mountOptions: ["ro"] },
      true,
      "ext4",
      { mount: { fsType: "xfs", mountFlags: ["ro"] }, accessMode: { mode: "SINGLE_NODE_SINGLE_WRITER" } },
    ],
    [
      { csi, accessModes: ["ReadWriteOncePod"], volumeMode: "Block" },
      false,
      "ext4",
      { block: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } },
    ],
    [
      { csi, accessModes: ["ReadOnlyMany"] },
      false,
      "",
      { mount: { fsType: "", mountFlags: [] }, accessMode: { mode: "MULTI_NODE_READER_ONLY" } },
    ],
    [
      { csi, accessModes: ["ReadWriteOnce", "ReadWriteMany"] },
      false,
      "",
      { mount: { fsType: "", mountFlags: [] }, accessMode: { mode: "MULTI_NODE_MULTI_WRITER" } },
    ],
  ];
  for (const [spec, snmw, defaultFsType, want] of cases)
    assert.deepEqual(
      volumeCapability(spec, { singleNodeMultiWriter: snmw, defaultFsType }),
      want,
      JSON.stringify(spec),
    );
  assert.throws(
    () =>
      volumeCapability(
        { csi, accessModes: ["ReadWriteOncePod", "ReadWriteOnce"] },
        { singleNodeMultiWriter: false, defaultFsType: "" },
      ),
    /ReadWriteOncePod may not be combined/,
  );
});

function va(source: VolumeAttachment["spec"]["source"]): VolumeAttachment {
  return { metadata: { name: "va" }, spec: { attacher: "d", nodeName: "n", source } };
}

test("attachmentVolume: PV or inline spec, and each malformed source named", () => {
  const pv: PersistentVolume = { metadata: { name: "pv" }, spec: { csi } };
  const lookup = (name: string): PersistentVolume | undefined => (name === "pv" ? pv : undefined);
  assert.equal(attachmentVolume(va({ persistentVolumeName: "pv" }), lookup).pv, pv);
  assert.equal(attachmentVolume(va({ inlineVolumeSpec: { csi } }), lookup).csi.volumeHandle, "h");
  const bad: [VolumeAttachment["spec"]["source"], RegExp][] = [
    [{}, /neither InlineCSIVolumeSource nor PersistentVolumeName/],
    [
      { persistentVolumeName: "pv", inlineVolumeSpec: { csi } },
      /both InlineCSIVolumeSource and PersistentVolumeName/,
    ],
    [{ persistentVolumeName: "other" }, /persistentvolume "other" not found/],
    [{ inlineVolumeSpec: {} }, /inline volume spec contains nil CSI source/],
  ];
  for (const [source, message] of bad) assert.throws(() => attachmentVolume(va(source), lookup), message);
  const inTree = (): PersistentVolume => ({
    metadata: { name: "pv" },
    spec: { hostPath: { path: "/x" } },
  });
  assert.throws(
    () => attachmentVolume(va({ persistentVolumeName: "pv" }), inTree),
    /non-csi source that was not migrated/,
  );
  // A migratable in-tree PV is translated (CSI migration); a malformed one says why not.
  const gce = (pdName: string) => (): PersistentVolume => ({
    metadata: { name: "pv" },
    spec: { accessModes: ["ReadWriteOnce"], gcePersistentDisk: { pdName, fsType: "ext4" } },
  });
  const migrated = attachmentVolume(va({ persistentVolumeName: "pv" }), gce("disk-1"));
  assert.equal(migrated.migrated, true);
  assert.equal(migrated.csi.driver, "pd.csi.storage.gke.io");
  assert.equal(migrated.csi.volumeHandle, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-1");
  assert.deepEqual(
    migrated.pv?.spec?.gcePersistentDisk,
    { pdName: "disk-1", fsType: "ext4" },
    "PV unmodified",
  );
  assert.throws(
    () => attachmentVolume(va({ persistentVolumeName: "pv" }), gce("")),
    /failed to translate in-tree PersistentVolume "pv" to CSI: /,
  );
});

test("attachmentChangeMatters: our own error reports do not re-sync; anything else does", () => {
  const base: VolumeAttachment = {
    metadata: { name: "va", resourceVersion: "1" },
    spec: { attacher: "d", nodeName: "n", source: { persistentVolumeName: "pv" } },
    status: { attached: false },
  };
  const withError: VolumeAttachment = {
    ...base,
    metadata: { ...base.metadata, resourceVersion: "2" },
    status: { attached: false, attachError: { time: "t", message: "m" } },
  };
  assert.equal(attachmentChangeMatters(base, base), true, "resync (same resourceVersion)");
  assert.equal(attachmentChangeMatters(base, withError), false, "only attachError changed");
  const newer = {
    ...withError,
    metadata: { ...withError.metadata, resourceVersion: "3" },
    status: { attached: false, attachError: { time: "u", message: "m2" } },
  };
  assert.equal(attachmentChangeMatters(withError, newer), false);
  const deleted = {
    ...newer,
    metadata: { ...newer.metadata, resourceVersion: "4", deletionTimestamp: "2026-01-01T00:00:00Z" },
  };
  assert.equal(attachmentChangeMatters(newer, deleted), true, "deletion matters");
  const noErrors = { ...base, metadata: { ...base.metadata, resourceVersion: "5", annotations: { a: "b" } } };
  assert.equal(attachmentChangeMatters(base, noErrors), true);
});

test("superseded versions: a write that changed nothing never marks the version the cache holds", () => {
  const ctx = { superseded: new Map<string, Set<string>>() } as Pick<AttacherContext, "superseded">;
  const attacher = ctx as AttacherContext;
  // An attach that wrote: 10 (seen) → 11 (intent) → 12 (attached). The cache at 10 or 11 waits.
  noteSuperseded(attacher, "va", ["10", "11"], "12");
  assert.equal(isSuperseded(attacher, "va", "11"), true);
  assert.equal(isSuperseded(attacher, "va", "12"), false, "the cache caught up");
  assert.equal(isSuperseded(attacher, "va", "11"), false, "the record is gone once caught up");
  // A forced re-attach of an attached volume: both patches were no-ops, 12 stays current. No
  // watch event will follow, so 12 must stay syncable (it stalled the ListVolumes repair).
  noteSuperseded(attacher, "va", ["12", "12"], "12");
  assert.equal(isSuperseded(attacher, "va", "12"), false);
  assert.equal(ctx.superseded.has("va"), false);
  // A detach whose object is gone: what it replaced still waits; nothing is current.
  noteSuperseded(attacher, "vb", ["20", "21"], undefined);
  assert.equal(isSuperseded(attacher, "vb", "21"), true);
});

function attachment(name: string, deleting: boolean): VolumeAttachment {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "VolumeAttachment",
    metadata: { name, ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}) },
    spec: { attacher: "d", nodeName: "n", source: { persistentVolumeName: "pv" } },
  };
}

test("lanes: each key goes to its object's lane; one key never syncs in both lanes at once", async () => {
  const store = new Store<VolumeAttachment>();
  const queues = {
    attach: new WorkQueue<string>({ name: "a" }),
    detach: new WorkQueue<string>({ name: "d" }),
  };
  let finishAttach!: () => void;
  const synced: string[] = [];
  const lanes = new AttachmentLanes({
    queues,
    attachments: store,
    sync: async (key) => {
      synced.push(key);
      if (synced.length === 1) await new Promise<void>((resolve) => (finishAttach = resolve));
    },
  });
  const rc = { signal: new AbortController().signal, logger: silentLogger };
  store.upsert(attachment("va", false));
  lanes.enqueue("va");
  assert.deepEqual([queues.attach.len(), queues.detach.len()], [1, 0]);
  // The attach lane takes it and its sync is still running when the object starts deleting.
  await queues.attach.get();
  const attaching = lanes.reconciler("attach")("va", rc);
  store.upsert(attachment("va", true));
  lanes.enqueueDetach("va");
  await queues.detach.get();
  await lanes.reconciler("detach")("va", rc);
  assert.deepEqual(synced, ["va"], "the detach lane defers while the attach lane syncs the key");
  queues.detach.done("va");
  finishAttach();
  await attaching;
  queues.attach.done("va");
  assert.equal(queues.detach.len(), 1, "handed back to the detach lane once the attach run ended");
  await queues.detach.get();
  await lanes.reconciler("detach")("va", rc);
  assert.deepEqual(synced, ["va", "va"]);
  // A stale attach-lane entry of a deleting object is handed over, not synced there.
  queues.detach.done("va");
  queues.attach.add("va");
  await queues.attach.get();
  await lanes.reconciler("attach")("va", rc);
  assert.deepEqual(synced, ["va", "va"]);
  assert.equal(queues.detach.len(), 1);
});
