// Controller service, snapshots: CreateSnapshot, DeleteSnapshot, ListSnapshots, GetSnapshot,
// and restoring a volume from a snapshot.

import { GrpcStatus } from "../../csi/index.ts";
import type { ListSnapshotsRequestInput, ListSnapshotsResponse_Entry } from "../../csi/index.ts";
import type { TestContext } from "../context.ts";
import { SanityAssertion, check, checkCode, expectCode, expectOk, firstRepeat, int64 } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";

const { INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, ABORTED, FAILED_PRECONDITION, OUT_OF_RANGE } =
  GrpcStatus;
const MAX_PAGES = 1000;

const SNAPSHOT = {
  requires: [
    "plugin:CONTROLLER_SERVICE",
    "controller:CREATE_DELETE_SNAPSHOT",
    "controller:CREATE_DELETE_VOLUME",
  ],
} as const;
const LIST = { requires: [...SNAPSHOT.requires, "controller:LIST_SNAPSHOTS"] } as const;

async function listAllSnapshots(
  t: TestContext,
  filter: Omit<ListSnapshotsRequestInput, "startingToken" | "secrets"> = {},
): Promise<ListSnapshotsResponse_Entry[]> {
  const entries: ListSnapshotsResponse_Entry[] = [];
  let token = "";
  for (let page = 0; page < MAX_PAGES; page++) {
    const response = await expectOk(
      t.controller.listSnapshots({
        ...filter,
        startingToken: token,
        secrets: t.secrets.ListSnapshotsSecret ?? {},
      }),
      `ListSnapshots page ${page + 1}`,
    );
    const max = filter.maxEntries ?? 0;
    check(
      max === 0 || response.entries.length <= max,
      `ListSnapshots: ${response.entries.length} entries with max_entries ${max}`,
    );
    entries.push(...response.entries);
    if (response.nextToken === "") return entries;
    token = response.nextToken;
  }
  throw new SanityAssertion(`ListSnapshots: still a next_token after ${MAX_PAGES} pages`);
}

const snapshotIds = (entries: readonly ListSnapshotsResponse_Entry[]): string[] =>
  entries.map((e) => e.snapshot?.snapshotId ?? "");

export function snapshotTests(): SanityTest[] {
  return [
    ...describe("Controller", "CreateSnapshot", SNAPSHOT, ({ it }) => {
      const create = (t: TestContext, name: string, sourceVolumeId: string) =>
        t.controller.createSnapshot({ name, sourceVolumeId, secrets: t.secrets.CreateSnapshotSecret ?? {} });
      const track = (t: TestContext) => (response: { snapshot: { snapshotId: string } | null }) => {
        if (response.snapshot) t.resources.snapshot(response.snapshot.snapshotId);
      };
      it("fails with INVALID_ARGUMENT when the name is missing", async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          create(t, "", volume.volumeId),
          INVALID_ARGUMENT,
          "CreateSnapshot without name",
          track(t),
        );
      });
      it("fails with INVALID_ARGUMENT when the source volume id is missing", async (t) => {
        await expectCode(
          create(t, t.uniqueName("snapshot"), ""),
          INVALID_ARGUMENT,
          "CreateSnapshot without source_volume_id",
          track(t),
        );
      });
      it("fails with NOT_FOUND for a source volume that does not exist", async (t) => {
        await expectCode(
          create(t, t.uniqueName("snapshot"), "sanity-no-such-volume"),
          NOT_FOUND,
          "CreateSnapshot of an unknown volume",
          track(t),
        );
      });
      it("cuts a snapshot that names its source and is ready to use", async (t) => {
        const volume = await t.createVolume();
        const snapshot = await t.createSnapshot(volume.volumeId);
        check(
          snapshot.sourceVolumeId === volume.volumeId,
          `CreateSnapshot: source_volume_id ${snapshot.sourceVolumeId}, want ${volume.volumeId}`,
        );
        check(snapshot.creationTime !== null, "CreateSnapshot: creation_time is unset (REQUIRED)");
        check(int64(snapshot.sizeBytes) >= 0n, "CreateSnapshot: negative size_bytes");
        check(snapshot.groupSnapshotId === "", "CreateSnapshot: a lone snapshot has a group_snapshot_id");
      });
      it("is idempotent: the same request answers the same snapshot", async (t) => {
        const volume = await t.createVolume();
        const name = t.uniqueName("snapshot");
        const first = await t.createSnapshot(volume.volumeId, name);
        const second = await t.createSnapshot(volume.volumeId, name);
        check(
          first.snapshotId === second.snapshotId,
          `CreateSnapshot again: snapshot_id ${second.snapshotId}, first ${first.snapshotId}`,
        );
      });
      it("fails with ALREADY_EXISTS for the same name and another source volume", async (t) => {
        const one = await t.createVolume();
        const other = await t.createVolume();
        const name = t.uniqueName("snapshot");
        await t.createSnapshot(one.volumeId, name);
        await expectCode(
          create(t, name, other.volumeId),
          ALREADY_EXISTS,
          "CreateSnapshot with an existing name and another source",
          track(t),
        );
      });
    }),

    ...describe("Controller", "DeleteSnapshot", SNAPSHOT, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the snapshot id is missing", async (t) => {
        await expectCode(
          t.controller.deleteSnapshot({ snapshotId: "", secrets: t.secrets.DeleteSnapshotSecret ?? {} }),
          INVALID_ARGUMENT,
          "DeleteSnapshot without snapshot_id",
        );
      });
      it("succeeds for a snapshot that does not exist", async (t) => {
        await expectOk(
          t.controller.deleteSnapshot({
            snapshotId: "sanity-no-such-snapshot",
            secrets: t.secrets.DeleteSnapshotSecret ?? {},
          }),
          "DeleteSnapshot of an unknown snapshot",
        );
      });
      it("deletes a snapshot, and deleting it again succeeds", async (t) => {
        const volume = await t.createVolume();
        const snapshot = await t.createSnapshot(volume.volumeId);
        await t.deleteSnapshot(snapshot.snapshotId);
        await t.deleteSnapshot(snapshot.snapshotId);
      });
      it("keeps snapshots usable after their source volume is deleted, or refuses the delete", async (t) => {
        const volume = await t.createVolume();
        const snapshot = await t.createSnapshot(volume.volumeId);
        try {
          await t.controller.deleteVolume({
            volumeId: volume.volumeId,
            secrets: t.secrets.DeleteVolumeSecret ?? {},
          });
        } catch (error) {
          // The spec's other branch: the volume must then be left as it was.
          checkCode(error, FAILED_PRECONDITION, "DeleteVolume of a volume with snapshots");
          return;
        }
        t.resources.forget("volume", volume.volumeId);
        await t.createVolume({ volumeContentSource: { snapshot: { snapshotId: snapshot.snapshotId } } });
      });
    }),

    ...describe("Controller", "ListSnapshots", LIST, ({ it }) => {
      it("lists a created snapshot and stops listing it once deleted", async (t) => {
        const volume = await t.createVolume();
        const snapshot = await t.createSnapshot(volume.volumeId);
        check(
          snapshotIds(await listAllSnapshots(t)).includes(snapshot.snapshotId),
          `ListSnapshots lacks ${snapshot.snapshotId}`,
        );
        await t.deleteSnapshot(snapshot.snapshotId);
        check(
          !snapshotIds(await listAllSnapshots(t)).includes(snapshot.snapshotId),
          `ListSnapshots still lists ${snapshot.snapshotId}`,
        );
      });
      it("filters by snapshot id", async (t) => {
        const volume = await t.createVolume();
        const snapshot = await t.createSnapshot(volume.volumeId);
        await t.createSnapshot(volume.volumeId);
        const listed = snapshotIds(await listAllSnapshots(t, { snapshotId: snapshot.snapshotId }));
        check(
          listed.length === 1 && listed[0] === snapshot.snapshotId,
          `ListSnapshots by snapshot_id ${snapshot.snapshotId}: [${listed.join(", ")}]`,
        );
      });
      it("answers an empty list for a snapshot id that does not exist", async (t) => {
        const listed = await listAllSnapshots(t, { snapshotId: "sanity-no-such-snapshot" });
        check(listed.length === 0, `ListSnapshots by an unknown snapshot_id: ${listed.length} entries`);
      });
      it("filters by source volume id", async (t) => {
        const one = await t.createVolume();
        const other = await t.createVolume();
        const mine = await t.createSnapshot(one.volumeId);
        await t.createSnapshot(other.volumeId);
        const listed = await listAllSnapshots(t, { sourceVolumeId: one.volumeId });
        check(
          snapshotIds(listed).includes(mine.snapshotId),
          `ListSnapshots by source lacks ${mine.snapshotId}`,
        );
        for (const entry of listed) {
          check(
            entry.snapshot?.sourceVolumeId === one.volumeId,
            `ListSnapshots by source ${one.volumeId} lists a snapshot of ${entry.snapshot?.sourceVolumeId}`,
          );
        }
      });
      it("answers an empty list for a source volume that does not exist", async (t) => {
        const listed = await listAllSnapshots(t, { sourceVolumeId: "sanity-no-such-volume" });
        check(listed.length === 0, `ListSnapshots by an unknown source_volume_id: ${listed.length} entries`);
      });
      it("pages with max_entries and next_token without losing or repeating entries", async (t) => {
        const volume = await t.createVolume();
        for (let i = 0; i < 3; i++) await t.createSnapshot(volume.volumeId);
        const all = snapshotIds(await listAllSnapshots(t)).sort();
        const paged = snapshotIds(await listAllSnapshots(t, { maxEntries: 1 })).sort();
        const repeated = firstRepeat(paged);
        check(
          repeated === undefined,
          `ListSnapshots paging with max_entries 1 listed ${repeated} twice (pages must not repeat entries)`,
        );
        check(
          JSON.stringify(all) === JSON.stringify(paged),
          `ListSnapshots one by one listed [${paged.join(", ")}], all at once [${all.join(", ")}]`,
        );
      });
      it("fails with ABORTED for a starting_token it never issued", async (t) => {
        await expectCode(
          t.controller.listSnapshots({
            startingToken: "sanity-invalid-token",
            secrets: t.secrets.ListSnapshotsSecret ?? {},
          }),
          ABORTED,
          "ListSnapshots with a bogus starting_token",
        );
      });
      it("fails with INVALID_ARGUMENT for negative max_entries", async (t) => {
        await expectCode(
          t.controller.listSnapshots({ maxEntries: -1, secrets: t.secrets.ListSnapshotsSecret ?? {} }),
          INVALID_ARGUMENT,
          "ListSnapshots max_entries -1",
        );
      });
    }),

    ...describe(
      "Controller",
      "GetSnapshot",
      { requires: [...SNAPSHOT.requires, "controller:GET_SNAPSHOT"] },
      ({ it }) => {
        const get = (t: TestContext, snapshotId: string) =>
          t.controller.getSnapshot({ snapshotId, secrets: t.secrets.GetSnapshotSecret ?? {} });
        it("fails with INVALID_ARGUMENT when the snapshot id is missing", async (t) => {
          await expectCode(get(t, ""), INVALID_ARGUMENT, "GetSnapshot without snapshot_id");
        });
        it("fails with NOT_FOUND for a snapshot that does not exist", async (t) => {
          await expectCode(
            get(t, "sanity-no-such-snapshot"),
            NOT_FOUND,
            "GetSnapshot of an unknown snapshot",
          );
        });
        it("returns the snapshot", async (t) => {
          const volume = await t.createVolume();
          const snapshot = await t.createSnapshot(volume.volumeId);
          const response = await expectOk(get(t, snapshot.snapshotId), "GetSnapshot");
          check(
            response.snapshot?.snapshotId === snapshot.snapshotId,
            `GetSnapshot: snapshot_id ${response.snapshot?.snapshotId}`,
          );
          check(
            response.snapshot.sourceVolumeId === volume.volumeId,
            `GetSnapshot: source_volume_id ${response.snapshot.sourceVolumeId}`,
          );
          check(response.snapshot.creationTime !== null, "GetSnapshot: creation_time is unset (REQUIRED)");
        });
        it("fails with NOT_FOUND for a snapshot that was deleted", async (t) => {
          const volume = await t.createVolume();
          const snapshot = await t.createSnapshot(volume.volumeId);
          await t.deleteSnapshot(snapshot.snapshotId);
          await expectCode(get(t, snapshot.snapshotId), NOT_FOUND, "GetSnapshot of a deleted snapshot");
        });
      },
    ),

    ...describe("Controller", "CreateVolume from snapshot", SNAPSHOT, ({ it }) => {
      it("fails with OUT_OF_RANGE for a volume smaller than the snapshot", async (t) => {
        const size = t.settings.testVolumeSize;
        const source = await t.createVolume();
        const snapshot = await t.createSnapshot(source.volumeId);
        const snapshotSize = int64(snapshot.sizeBytes);
        if (snapshotSize < 2n)
          t.skip(`the snapshot reports size_bytes ${snapshot.sizeBytes}: no smaller size to ask for`);
        const smaller = String(snapshotSize / 2n);
        await expectCode(
          t.controller.createVolume(
            t.volumeRequest({
              capacityRange: { requiredBytes: smaller, limitBytes: smaller },
              volumeContentSource: { snapshot: { snapshotId: snapshot.snapshotId } },
            }),
          ),
          OUT_OF_RANGE,
          `CreateVolume of ${smaller} bytes from a snapshot of ${snapshotSize} bytes (volume size ${size})`,
          (response) => {
            if (response.volume) t.resources.volume(response.volume.volumeId);
          },
        );
      });
      it("restores into a larger volume, or answers OUT_OF_RANGE", async (t) => {
        const source = await t.createVolume();
        const snapshot = await t.createSnapshot(source.volumeId);
        const larger = t.settings.testVolumeExpandSize;
        const request = t.volumeRequest({
          capacityRange: { requiredBytes: String(larger) },
          volumeContentSource: { snapshot: { snapshotId: snapshot.snapshotId } },
        });
        let capacity: bigint;
        try {
          const response = await t.controller.createVolume(request);
          if (response.volume) t.resources.volume(response.volume.volumeId);
          capacity = int64(response.volume?.capacityBytes);
        } catch (error) {
          checkCode(error, OUT_OF_RANGE, "CreateVolume larger than its source snapshot");
          return;
        }
        check(
          capacity === 0n || capacity >= BigInt(larger),
          `CreateVolume from snapshot: capacity_bytes ${capacity} < required ${larger}`,
        );
      });
      it("restores a volume from a snapshot and reports the source", async (t) => {
        const source = await t.createVolume();
        const snapshot = await t.createSnapshot(source.volumeId);
        const restored = await t.createVolume({
          volumeContentSource: { snapshot: { snapshotId: snapshot.snapshotId } },
        });
        const reported = restored.contentSource?.snapshot?.snapshotId;
        check(
          reported === undefined || reported === snapshot.snapshotId,
          `CreateVolume from snapshot: content_source names snapshot ${reported}, want ${snapshot.snapshotId}`,
        );
      });
      it("fails with ALREADY_EXISTS for the same name and another snapshot", async (t) => {
        const source = await t.createVolume();
        const one = await t.createSnapshot(source.volumeId);
        const other = await t.createSnapshot(source.volumeId);
        const request = t.volumeRequest({
          volumeContentSource: { snapshot: { snapshotId: one.snapshotId } },
        });
        await t.createVolume(request);
        await expectCode(
          t.controller.createVolume({
            ...request,
            volumeContentSource: { snapshot: { snapshotId: other.snapshotId } },
          }),
          ALREADY_EXISTS,
          "CreateVolume with an existing name and another source snapshot",
          (response) => {
            if (response.volume) t.resources.volume(response.volume.volumeId);
          },
        );
      });
    }),
  ];
}
