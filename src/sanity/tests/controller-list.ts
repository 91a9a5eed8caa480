// Controller service, inventory: ListVolumes (pagination, stale tokens, published nodes, volume
// condition), GetCapacity, ControllerGetVolume.

import { GrpcStatus } from "../../csi/index.ts";
import type { ListVolumesResponse_Entry } from "../../csi/index.ts";
import type { TestContext } from "../context.ts";
import { SanityAssertion, check, expectCode, expectOk, firstRepeat, int64 } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";

const { INVALID_ARGUMENT, NOT_FOUND, ABORTED } = GrpcStatus;

/** Upper bound on pages walked, so a driver that never ends a listing fails instead of looping. */
const MAX_PAGES = 1000;

/** Every entry of ListVolumes, following next_token with `maxEntries` per page. */
export async function listAllVolumes(t: TestContext, maxEntries = 0): Promise<ListVolumesResponse_Entry[]> {
  const entries: ListVolumesResponse_Entry[] = [];
  let token = "";
  for (let page = 0; page < MAX_PAGES; page++) {
    const response = await expectOk(
      t.controller.listVolumes({ maxEntries, startingToken: token }),
      `ListVolumes page ${page + 1}`,
    );
    check(
      maxEntries === 0 || response.entries.length <= maxEntries,
      `ListVolumes: ${response.entries.length} entries with max_entries ${maxEntries}`,
    );
    entries.push(...response.entries);
    if (response.nextToken === "") return entries;
    token = response.nextToken;
  }
  throw new SanityAssertion(`ListVolumes: still a next_token after ${MAX_PAGES} pages`);
}

const ids = (entries: readonly ListVolumesResponse_Entry[]): string[] =>
  entries.map((e) => e.volume?.volumeId ?? "");

const LIST = { requires: ["plugin:CONTROLLER_SERVICE", "controller:LIST_VOLUMES"] } as const;

export function controllerListTests(): SanityTest[] {
  return [
    ...describe("Controller", "ListVolumes", LIST, ({ it }) => {
      it("returns entries that each carry a volume id", async (t) => {
        for (const entry of await listAllVolumes(t)) {
          check(entry.volume?.volumeId, "ListVolumes: an entry without volume_id");
        }
      });
      it(
        "lists a created volume and stops listing it once deleted",
        { requires: ["controller:CREATE_DELETE_VOLUME"] },
        async (t) => {
          const volume = await t.createVolume();
          check(
            ids(await listAllVolumes(t)).includes(volume.volumeId),
            `ListVolumes lacks new volume ${volume.volumeId}`,
          );
          await t.deleteVolume(volume.volumeId);
          check(
            !ids(await listAllVolumes(t)).includes(volume.volumeId),
            `ListVolumes still lists deleted ${volume.volumeId}`,
          );
        },
      );
      it(
        "pages with max_entries and next_token without losing or repeating entries",
        { requires: ["controller:CREATE_DELETE_VOLUME"] },
        async (t) => {
          for (let i = 0; i < 3; i++) await t.createVolume();
          const all = ids(await listAllVolumes(t));
          const paged = ids(await listAllVolumes(t, 1));
          const repeated = firstRepeat(paged);
          check(
            repeated === undefined,
            `ListVolumes paging with max_entries 1 listed ${repeated} twice (pages must not repeat entries)`,
          );
          check(
            JSON.stringify([...all].sort()) === JSON.stringify([...paged].sort()),
            `ListVolumes one by one listed [${paged.join(", ")}], all at once [${all.join(", ")}]`,
          );
          const first = await expectOk(
            t.controller.listVolumes({ maxEntries: 2 }),
            "ListVolumes max_entries 2",
          );
          check(first.entries.length === 2, `ListVolumes max_entries 2: ${first.entries.length} entries`);
          check(first.nextToken !== "", "ListVolumes max_entries 2: no next_token though more volumes exist");
        },
      );
      it(
        "accepts a token after volumes are added and removed between pages",
        { requires: ["controller:CREATE_DELETE_VOLUME"] },
        async (t) => {
          const made = [];
          for (let i = 0; i < 3; i++) made.push(await t.createVolume());
          const first = await expectOk(
            t.controller.listVolumes({ maxEntries: 2 }),
            "ListVolumes max_entries 2",
          );
          check(first.nextToken !== "", "ListVolumes max_entries 2: no next_token though more volumes exist");
          const last = first.entries.at(-1)?.volume?.volumeId;
          if (last !== undefined && made.some((v) => v.volumeId === last)) await t.deleteVolume(last);
          const added = await t.createVolume();
          const rest = await expectOk(
            t.controller.listVolumes({ maxEntries: 0, startingToken: first.nextToken }),
            "ListVolumes with a token after a delete and a create",
          );
          check(
            !ids(rest.entries).some((id) => id === last && last !== added.volumeId),
            "ListVolumes: the next page lists the volume deleted between pages",
          );
          check(ids(await listAllVolumes(t)).includes(added.volumeId), `ListVolumes lacks ${added.volumeId}`);
        },
      );
      it("fails with ABORTED for a starting_token it never issued", async (t) => {
        await expectCode(
          t.controller.listVolumes({ startingToken: "sanity-invalid-token" }),
          ABORTED,
          "ListVolumes with a bogus starting_token",
        );
      });
      it("fails with INVALID_ARGUMENT for negative max_entries", async (t) => {
        await expectCode(
          t.controller.listVolumes({ maxEntries: -1 }),
          INVALID_ARGUMENT,
          "ListVolumes max_entries -1",
        );
      });
      it(
        "reports the nodes a volume is published to",
        {
          requires: [
            "controller:LIST_VOLUMES_PUBLISHED_NODES",
            "controller:PUBLISH_UNPUBLISH_VOLUME",
            "controller:CREATE_DELETE_VOLUME",
          ],
        },
        async (t) => {
          const capability = t.mountCapability();
          const volume = await t.createVolume({ volumeCapabilities: [capability] });
          await t.controllerPublish(volume.volumeId, capability);
          const nodeId = await t.nodeId();
          const entry = (await listAllVolumes(t)).find((e) => e.volume?.volumeId === volume.volumeId);
          check(entry, `ListVolumes lacks ${volume.volumeId}`);
          check(
            entry.status?.publishedNodeIds.includes(nodeId),
            `ListVolumes: published_node_ids of ${volume.volumeId} lack ${nodeId}`,
          );
        },
      );
      it(
        "reports a volume condition",
        { requires: ["controller:VOLUME_CONDITION", "controller:CREATE_DELETE_VOLUME"] },
        async (t) => {
          const volume = await t.createVolume();
          const entry = (await listAllVolumes(t)).find((e) => e.volume?.volumeId === volume.volumeId);
          // The spec requires the field with the capability, not any particular condition: a
          // fresh volume may well be abnormal (a degraded backend), so `abnormal` is not judged.
          check(entry?.status?.volumeCondition, `ListVolumes: no volume_condition for ${volume.volumeId}`);
        },
      );
    }),

    ...describe(
      "Controller",
      "GetCapacity",
      { requires: ["plugin:CONTROLLER_SERVICE", "controller:GET_CAPACITY"] },
      ({ it }) => {
        it("answers the available capacity without arguments", async (t) => {
          const response = await expectOk(t.controller.getCapacity({}), "GetCapacity");
          check(int64(response.availableCapacity) >= 0n, "GetCapacity: negative available_capacity");
        });
        it("answers for a volume capability and the test parameters", async (t) => {
          const response = await expectOk(
            t.controller.getCapacity({
              volumeCapabilities: [t.mountCapability()],
              parameters: t.settings.parameters,
            }),
            "GetCapacity with capability and parameters",
          );
          check(int64(response.availableCapacity) >= 0n, "GetCapacity: negative available_capacity");
          const min = int64(response.minimumVolumeSize?.value);
          const max = response.maximumVolumeSize ? int64(response.maximumVolumeSize.value) : undefined;
          check(
            max === undefined || min <= max,
            `GetCapacity: minimum_volume_size ${min} > maximum_volume_size ${max}`,
          );
        });
        it(
          "answers for the node's topology segment",
          { requires: ["plugin:VOLUME_ACCESSIBILITY_CONSTRAINTS"] },
          async (t) => {
            const info = await t.nodeInfo();
            check(info.accessibleTopology, "NodeGetInfo: no accessible_topology");
            const response = await expectOk(
              t.controller.getCapacity({
                accessibleTopology: info.accessibleTopology,
                parameters: t.settings.parameters,
              }),
              "GetCapacity for the node's topology",
            );
            check(int64(response.availableCapacity) >= 0n, "GetCapacity: negative available_capacity");
          },
        );
      },
    ),

    ...describe(
      "Controller",
      "ControllerGetVolume",
      { requires: ["plugin:CONTROLLER_SERVICE", "controller:GET_VOLUME"] },
      ({ it }) => {
        it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
          await expectCode(
            t.controller.controllerGetVolume({ volumeId: "" }),
            INVALID_ARGUMENT,
            "ControllerGetVolume without volume_id",
          );
        });
        it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
          await expectCode(
            t.controller.controllerGetVolume({ volumeId: "sanity-no-such-volume" }),
            NOT_FOUND,
            "ControllerGetVolume of an unknown volume",
          );
        });
        it(
          "returns the volume with its status",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            const capability = t.mountCapability();
            const volume = await t.createVolume({ volumeCapabilities: [capability] });
            await t.controllerPublish(volume.volumeId, capability);
            const response = await expectOk(
              t.controller.controllerGetVolume({ volumeId: volume.volumeId }),
              "ControllerGetVolume",
            );
            check(
              response.volume?.volumeId === volume.volumeId,
              `ControllerGetVolume: volume_id ${response.volume?.volumeId}`,
            );
            check(
              response.volume.capacityBytes === volume.capacityBytes,
              `ControllerGetVolume: capacity_bytes ${response.volume.capacityBytes}, CreateVolume said ${volume.capacityBytes}`,
            );
            if (t.has("controller:VOLUME_CONDITION")) {
              check(
                response.status?.volumeCondition,
                "ControllerGetVolume: no volume_condition (VOLUME_CONDITION capability)",
              );
            }
            if (
              t.has("controller:LIST_VOLUMES_PUBLISHED_NODES") &&
              t.has("controller:PUBLISH_UNPUBLISH_VOLUME")
            ) {
              const nodeId = await t.nodeId();
              check(
                response.status?.publishedNodeIds.includes(nodeId),
                `ControllerGetVolume: published_node_ids lack ${nodeId}`,
              );
            }
          },
        );
        it(
          "fails with NOT_FOUND once the volume is deleted",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            const volume = await t.createVolume();
            await t.deleteVolume(volume.volumeId);
            await expectCode(
              t.controller.controllerGetVolume({ volumeId: volume.volumeId }),
              NOT_FOUND,
              "ControllerGetVolume of a deleted volume",
            );
          },
        );
      },
    ),
  ];
}
