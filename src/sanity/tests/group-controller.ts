// GroupController service: capabilities, CreateVolumeGroupSnapshot, GetVolumeGroupSnapshot,
// DeleteVolumeGroupSnapshot.

import { GrpcStatus } from "../../csi/index.ts";
import type { TestContext } from "../context.ts";
import { check, expectCode, expectOk } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";
import type { VolumeGroupSnapshot } from "../types.ts";

const { INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS } = GrpcStatus;

const GROUP = {
  requires: [
    "plugin:GROUP_CONTROLLER_SERVICE",
    "group:CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT",
    "plugin:CONTROLLER_SERVICE",
    "controller:CREATE_DELETE_VOLUME",
  ],
} as const;

function createRequest(t: TestContext, name: string, sourceVolumeIds: string[]) {
  return { name, sourceVolumeIds, secrets: t.secrets.CreateVolumeGroupSnapshotSecret ?? {}, parameters: {} };
}

/** CreateVolumeGroupSnapshot that must succeed; tracked for cleanup. */
async function createGroup(
  t: TestContext,
  name: string,
  sourceVolumeIds: string[],
): Promise<VolumeGroupSnapshot> {
  const response = await expectOk(
    t.group.createVolumeGroupSnapshot(createRequest(t, name, sourceVolumeIds)),
    `CreateVolumeGroupSnapshot ${name}`,
  );
  const group = response.groupSnapshot;
  check(group?.groupSnapshotId, "CreateVolumeGroupSnapshot: no group_snapshot_id");
  t.resources.groupSnapshot(
    group.groupSnapshotId,
    group.snapshots.map((s) => s.snapshotId),
  );
  return group;
}

function trackUnexpected(t: TestContext) {
  return (response: { groupSnapshot: VolumeGroupSnapshot | null }): void => {
    const group = response.groupSnapshot;
    if (group)
      t.resources.groupSnapshot(
        group.groupSnapshotId,
        group.snapshots.map((s) => s.snapshotId),
      );
  };
}

export function groupControllerTests(): SanityTest[] {
  return [
    ...describe(
      "GroupController",
      "GroupControllerGetCapabilities",
      { requires: ["plugin:GROUP_CONTROLLER_SERVICE"] },
      ({ it }) => {
        it("returns only known capabilities", async (t) => {
          const response = await expectOk(
            t.group.groupControllerGetCapabilities({}),
            "GroupControllerGetCapabilities",
          );
          for (const capability of response.capabilities) {
            const type = capability.rpc?.type ?? "";
            check(
              type !== "" && type !== "UNKNOWN",
              `GroupControllerGetCapabilities: entry with type ${type || "unset"}`,
            );
          }
        });
      },
    ),

    ...describe("GroupController", "CreateVolumeGroupSnapshot", GROUP, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the name is missing", async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.group.createVolumeGroupSnapshot(createRequest(t, "", [volume.volumeId])),
          INVALID_ARGUMENT,
          "CreateVolumeGroupSnapshot without name",
          trackUnexpected(t),
        );
      });
      it("fails with INVALID_ARGUMENT when source_volume_ids is empty", async (t) => {
        await expectCode(
          t.group.createVolumeGroupSnapshot(createRequest(t, t.uniqueName("group"), [])),
          INVALID_ARGUMENT,
          "CreateVolumeGroupSnapshot without source_volume_ids",
          trackUnexpected(t),
        );
      });
      it("snapshots every source volume into one group", async (t) => {
        const volumes = [await t.createVolume(), await t.createVolume()];
        const group = await createGroup(
          t,
          t.uniqueName("group"),
          volumes.map((v) => v.volumeId),
        );
        check(
          group.snapshots.length === volumes.length,
          `CreateVolumeGroupSnapshot: ${group.snapshots.length} snapshots for ${volumes.length} volumes`,
        );
        for (const volume of volumes) {
          const snapshot = group.snapshots.find((s) => s.sourceVolumeId === volume.volumeId);
          check(snapshot, `CreateVolumeGroupSnapshot: no snapshot of ${volume.volumeId}`);
          check(
            snapshot.groupSnapshotId === group.groupSnapshotId,
            `CreateVolumeGroupSnapshot: snapshot ${snapshot.snapshotId} has group_snapshot_id ${snapshot.groupSnapshotId}`,
          );
        }
        check(group.creationTime !== null, "CreateVolumeGroupSnapshot: creation_time is unset (REQUIRED)");
      });
      it("is idempotent: the same request answers the same group", async (t) => {
        const volume = await t.createVolume();
        const name = t.uniqueName("group");
        const first = await createGroup(t, name, [volume.volumeId]);
        const second = await createGroup(t, name, [volume.volumeId]);
        check(
          first.groupSnapshotId === second.groupSnapshotId,
          "CreateVolumeGroupSnapshot again: another group_snapshot_id",
        );
        check(
          JSON.stringify(first.snapshots.map((s) => s.snapshotId).sort()) ===
            JSON.stringify(second.snapshots.map((s) => s.snapshotId).sort()),
          "CreateVolumeGroupSnapshot again: other snapshot ids",
        );
      });
      it("fails with ALREADY_EXISTS for the same name and other source volumes", async (t) => {
        const one = await t.createVolume();
        const other = await t.createVolume();
        const name = t.uniqueName("group");
        await createGroup(t, name, [one.volumeId]);
        await expectCode(
          t.group.createVolumeGroupSnapshot(createRequest(t, name, [other.volumeId])),
          ALREADY_EXISTS,
          "CreateVolumeGroupSnapshot with an existing name and other sources",
          trackUnexpected(t),
        );
      });
      it(
        "makes snapshots a volume can be restored from",
        { requires: ["controller:CREATE_DELETE_SNAPSHOT"] },
        async (t) => {
          const volume = await t.createVolume();
          const group = await createGroup(t, t.uniqueName("group"), [volume.volumeId]);
          const snapshotId = group.snapshots[0]?.snapshotId ?? "";
          await t.createVolume({ volumeContentSource: { snapshot: { snapshotId } } });
        },
      );
    }),

    ...describe("GroupController", "GetVolumeGroupSnapshot", GROUP, ({ it }) => {
      const get = (t: TestContext, groupSnapshotId: string, snapshotIds: string[] = []) =>
        t.group.getVolumeGroupSnapshot({
          groupSnapshotId,
          snapshotIds,
          secrets: t.secrets.GetVolumeGroupSnapshotSecret ?? {},
        });
      it("fails with INVALID_ARGUMENT when the group snapshot id is missing", async (t) => {
        await expectCode(get(t, ""), INVALID_ARGUMENT, "GetVolumeGroupSnapshot without group_snapshot_id");
      });
      it("fails with NOT_FOUND for a group snapshot that does not exist", async (t) => {
        await expectCode(
          get(t, "sanity-no-such-group"),
          NOT_FOUND,
          "GetVolumeGroupSnapshot of an unknown group",
        );
      });
      it("returns the group snapshot with its snapshots", async (t) => {
        const volume = await t.createVolume();
        const group = await createGroup(t, t.uniqueName("group"), [volume.volumeId]);
        const ids = group.snapshots.map((s) => s.snapshotId);
        const response = await expectOk(get(t, group.groupSnapshotId, ids), "GetVolumeGroupSnapshot");
        check(
          response.groupSnapshot?.groupSnapshotId === group.groupSnapshotId,
          "GetVolumeGroupSnapshot: another group_snapshot_id",
        );
        check(
          JSON.stringify(response.groupSnapshot.snapshots.map((s) => s.snapshotId).sort()) ===
            JSON.stringify([...ids].sort()),
          "GetVolumeGroupSnapshot: the snapshots differ from CreateVolumeGroupSnapshot's",
        );
      });
    }),

    ...describe("GroupController", "DeleteVolumeGroupSnapshot", GROUP, ({ it }) => {
      const del = (t: TestContext, groupSnapshotId: string, snapshotIds: string[]) =>
        t.group.deleteVolumeGroupSnapshot({
          groupSnapshotId,
          snapshotIds,
          secrets: t.secrets.DeleteVolumeGroupSnapshotSecret ?? {},
        });
      it("fails with INVALID_ARGUMENT when the group snapshot id is missing", async (t) => {
        await expectCode(
          del(t, "", []),
          INVALID_ARGUMENT,
          "DeleteVolumeGroupSnapshot without group_snapshot_id",
        );
      });
      it("succeeds for a group snapshot that does not exist", async (t) => {
        await expectOk(del(t, "sanity-no-such-group", []), "DeleteVolumeGroupSnapshot of an unknown group");
      });
      it("deletes the group and its snapshots, and deleting again succeeds", async (t) => {
        const volume = await t.createVolume();
        const group = await createGroup(t, t.uniqueName("group"), [volume.volumeId]);
        const ids = group.snapshots.map((s) => s.snapshotId);
        await expectOk(del(t, group.groupSnapshotId, ids), "DeleteVolumeGroupSnapshot");
        await expectOk(del(t, group.groupSnapshotId, ids), "DeleteVolumeGroupSnapshot again");
        t.resources.forget("groupSnapshot", group.groupSnapshotId);
        await expectCode(
          t.group.getVolumeGroupSnapshot({
            groupSnapshotId: group.groupSnapshotId,
            snapshotIds: ids,
            secrets: t.secrets.GetVolumeGroupSnapshotSecret ?? {},
          }),
          NOT_FOUND,
          "GetVolumeGroupSnapshot after delete",
        );
        if (t.has("controller:GET_SNAPSHOT") && ids[0] !== undefined) {
          await expectCode(
            t.controller.getSnapshot({ snapshotId: ids[0], secrets: t.secrets.GetSnapshotSecret ?? {} }),
            NOT_FOUND,
            "GetSnapshot of a member of a deleted group",
          );
        }
      });
    }),
  ];
}
