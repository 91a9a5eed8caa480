// Node service, arguments and bookkeeping: NodeGetCapabilities, NodeGetInfo, and the required
// fields, NOT_FOUND cases and idempotency of NodeStage/Unstage/Publish/Unpublish.

import { GrpcStatus } from "../../csi/index.ts";
import type { TestContext } from "../context.ts";
import { check, expectCode, expectOk, int64 } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";
import type { Volume } from "../types.ts";

const { INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION } = GrpcStatus;

const VOLUMES = { requires: ["plugin:CONTROLLER_SERVICE", "controller:CREATE_DELETE_VOLUME"] } as const;
const STAGE = { requires: ["node:STAGE_UNSTAGE_VOLUME"] } as const;

function stageRequest(t: TestContext, volume: Pick<Volume, "volumeId">, stagingTargetPath: string) {
  return {
    volumeId: volume.volumeId,
    stagingTargetPath,
    volumeCapability: t.mountCapability(),
    publishContext: {},
    secrets: t.secrets.NodeStageVolumeSecret ?? {},
    volumeContext: {},
  };
}

export function nodeTests(): SanityTest[] {
  return [
    ...describe("Node", "NodeGetCapabilities", {}, ({ it }) => {
      it("returns only known capabilities, none twice", async (t) => {
        const response = await expectOk(t.node.nodeGetCapabilities({}), "NodeGetCapabilities");
        const names = response.capabilities.map((c) => c.rpc?.type ?? "");
        for (const name of names)
          check(name !== "" && name !== "UNKNOWN", `NodeGetCapabilities: entry with type ${name || "unset"}`);
        const duplicate = names.find((name, i) => names.indexOf(name) !== i);
        check(duplicate === undefined, `NodeGetCapabilities: ${duplicate} is reported twice`);
      });
    }),

    ...describe("Node", "NodeGetInfo", {}, ({ it }) => {
      it("returns a non-empty node id and a non-negative max_volumes_per_node", async (t) => {
        const info = await expectOk(t.node.nodeGetInfo({}), "NodeGetInfo");
        check(info.nodeId !== "", "NodeGetInfo: node_id is empty (REQUIRED)");
        check(
          int64(info.maxVolumesPerNode) >= 0n,
          `NodeGetInfo: max_volumes_per_node ${info.maxVolumesPerNode} is negative`,
        );
      });
      it(
        "returns the node's accessible topology",
        { requires: ["plugin:VOLUME_ACCESSIBILITY_CONSTRAINTS"] },
        async (t) => {
          const info = await expectOk(t.node.nodeGetInfo({}), "NodeGetInfo");
          check(
            info.accessibleTopology && Object.keys(info.accessibleTopology.segments).length > 0,
            "NodeGetInfo: no accessible_topology though the plugin reports VOLUME_ACCESSIBILITY_CONSTRAINTS",
          );
        },
      );
    }),

    ...describe("Node", "NodeStageVolume", STAGE, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        const path = await t.makeStagingPath();
        await expectCode(
          t.node.nodeStageVolume(stageRequest(t, { volumeId: "" }, path)),
          INVALID_ARGUMENT,
          "NodeStageVolume without volume_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the staging path is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.node.nodeStageVolume(stageRequest(t, volume, "")),
          INVALID_ARGUMENT,
          "NodeStageVolume without staging_target_path",
        );
      });
      it("fails with INVALID_ARGUMENT when the volume capability is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        const path = await t.makeStagingPath();
        await expectCode(
          t.node.nodeStageVolume({ ...stageRequest(t, volume, path), volumeCapability: null }),
          INVALID_ARGUMENT,
          "NodeStageVolume without volume_capability",
        );
      });
      it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
        const path = await t.makeStagingPath();
        await expectCode(
          t.node.nodeStageVolume(stageRequest(t, { volumeId: "sanity-no-such-volume" }, path)),
          NOT_FOUND,
          "NodeStageVolume of an unknown volume",
          () => t.resources.staged("sanity-no-such-volume", path),
        );
      });
      it("stages, and staging again succeeds", { ...VOLUMES, mounts: true }, async (t) => {
        const capability = t.mountCapability();
        const volume = await t.createVolume({ volumeCapabilities: [capability] });
        const context = await t.controllerPublish(volume.volumeId, capability);
        const path = await t.stage(volume, capability, context);
        check(path, "stage: no staging path");
        await expectOk(
          t.node.nodeStageVolume({
            ...stageRequest(t, volume, path),
            publishContext: context,
            volumeContext: volume.volumeContext,
          }),
          "NodeStageVolume again",
        );
      });
      it(
        "refuses to stage again at the same path with another access type",
        { ...VOLUMES, mounts: true },
        async (t) => {
          const capability = t.mountCapability();
          const volume = await t.createVolume({ volumeCapabilities: [capability] });
          const context = await t.controllerPublish(volume.volumeId, capability);
          const path = await t.stage(volume, capability, context);
          check(path, "stage: no staging path");
          await expectCode(
            t.node.nodeStageVolume({
              ...stageRequest(t, volume, path),
              volumeCapability: t.blockCapability(),
              publishContext: context,
              volumeContext: volume.volumeContext,
            }),
            [ALREADY_EXISTS, FAILED_PRECONDITION],
            "NodeStageVolume as block at a path staged as mount",
          );
        },
      );
    }),

    ...describe("Node", "NodeUnstageVolume", STAGE, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        const path = await t.makeStagingPath();
        await expectCode(
          t.node.nodeUnstageVolume({ volumeId: "", stagingTargetPath: path }),
          INVALID_ARGUMENT,
          "NodeUnstageVolume without volume_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the staging path is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.node.nodeUnstageVolume({ volumeId: volume.volumeId, stagingTargetPath: "" }),
          INVALID_ARGUMENT,
          "NodeUnstageVolume without staging_target_path",
        );
      });
      // The spec's MUST holds also for a plugin that may not mount: nothing is staged there.
      it("succeeds for a volume that is not staged there", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        const path = await t.makeStagingPath();
        await t.node.nodeUnstageVolume({ volumeId: volume.volumeId, stagingTargetPath: path });
      });
      it("unstages, and unstaging again succeeds", { ...VOLUMES, mounts: true }, async (t) => {
        const capability = t.mountCapability();
        const volume = await t.createVolume({ volumeCapabilities: [capability] });
        const context = await t.controllerPublish(volume.volumeId, capability);
        const path = await t.stage(volume, capability, context);
        check(path, "stage: no staging path");
        for (const round of ["", " again"]) {
          await expectOk(
            t.node.nodeUnstageVolume({ volumeId: volume.volumeId, stagingTargetPath: path }),
            `NodeUnstageVolume${round}`,
          );
        }
        t.resources.forget("nodeStage", volume.volumeId, path);
      });
    }),

    ...describe("Node", "NodePublishVolume", {}, ({ it }) => {
      const request = async (t: TestContext, volumeId: string) => ({
        volumeId,
        targetPath: await t.makeTargetPath(),
        stagingTargetPath: t.has("node:STAGE_UNSTAGE_VOLUME") ? await t.makeStagingPath() : "",
        volumeCapability: t.mountCapability(),
        readonly: false,
        publishContext: {},
        secrets: t.secrets.NodePublishVolumeSecret ?? {},
        volumeContext: {},
      });
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          t.node.nodePublishVolume(await request(t, "")),
          INVALID_ARGUMENT,
          "NodePublishVolume without volume_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the target path is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.node.nodePublishVolume({ ...(await request(t, volume.volumeId)), targetPath: "" }),
          INVALID_ARGUMENT,
          "NodePublishVolume without target_path",
        );
      });
      it("fails with INVALID_ARGUMENT when the volume capability is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.node.nodePublishVolume({ ...(await request(t, volume.volumeId)), volumeCapability: null }),
          INVALID_ARGUMENT,
          "NodePublishVolume without volume_capability",
        );
      });
      it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
        const req = await request(t, "sanity-no-such-volume");
        await expectCode(
          t.node.nodePublishVolume(req),
          NOT_FOUND,
          "NodePublishVolume of an unknown volume",
          () => t.resources.published("sanity-no-such-volume", req.targetPath),
        );
      });
      it(
        "fails with FAILED_PRECONDITION when staging is required but no staging path is given",
        { ...VOLUMES, ...STAGE },
        async (t) => {
          const capability = t.mountCapability();
          const volume = await t.createVolume({ volumeCapabilities: [capability] });
          const context = await t.controllerPublish(volume.volumeId, capability);
          const req = {
            ...(await request(t, volume.volumeId)),
            stagingTargetPath: "",
            publishContext: context,
            volumeContext: volume.volumeContext,
          };
          await expectCode(
            t.node.nodePublishVolume(req),
            FAILED_PRECONDITION,
            "NodePublishVolume without staging_target_path",
            () => t.resources.published(volume.volumeId, req.targetPath),
          );
        },
      );
      it(
        "publishes, and publishing again with the same arguments succeeds",
        { ...VOLUMES, mounts: true },
        async (t) => {
          const setup = await t.setupVolume();
          await expectOk(
            t.node.nodePublishVolume(
              t.publishRequest(setup.volume, setup.capability, {
                stagingPath: setup.stagingPath,
                publishContext: setup.publishContext,
                targetPath: setup.targetPath,
              }),
            ),
            "NodePublishVolume again",
          );
        },
      );
      it(
        "fails with ALREADY_EXISTS when published again at the same target with another readonly flag",
        { ...VOLUMES, mounts: true },
        async (t) => {
          const setup = await t.setupVolume();
          await expectCode(
            t.node.nodePublishVolume(
              t.publishRequest(setup.volume, setup.capability, {
                stagingPath: setup.stagingPath,
                publishContext: setup.publishContext,
                targetPath: setup.targetPath,
                readonly: true,
              }),
            ),
            ALREADY_EXISTS,
            "NodePublishVolume again, read-only this time",
          );
        },
      );
      it(
        "publishes a SINGLE_NODE_MULTI_WRITER volume at a second target",
        {
          requires: [
            ...VOLUMES.requires,
            "controller:SINGLE_NODE_MULTI_WRITER",
            "node:SINGLE_NODE_MULTI_WRITER",
          ],
          mounts: true,
        },
        async (t) => {
          const capability = t.mountCapability("SINGLE_NODE_MULTI_WRITER");
          const volume = await t.createVolume({ volumeCapabilities: [capability] });
          const context = await t.controllerPublish(volume.volumeId, capability);
          const stagingPath = await t.stage(volume, capability, context);
          await t.publish(volume, capability, { stagingPath, publishContext: context });
          await t.publish(volume, capability, { stagingPath, publishContext: context });
        },
      );
    }),

    ...describe(
      "Node",
      "NodePublishVolume SINGLE_NODE_SINGLE_WRITER",
      // As csi-test v5.5 (#602): a driver with the node's SINGLE_NODE_MULTI_WRITER capability
      // tells single from multi writers, so it must refuse a second target (CSI v1.12's
      // NodePublishVolume table: T1!=T2 is FAILED_PRECONDITION for SINGLE_NODE_SINGLE_WRITER).
      { requires: [...VOLUMES.requires, "node:SINGLE_NODE_MULTI_WRITER"], mounts: true },
      ({ it }) => {
        const singleWriter = async (t: TestContext) => {
          const capability = t.mountCapability("SINGLE_NODE_SINGLE_WRITER");
          const volume = await t.createVolume({ volumeCapabilities: [capability] });
          const publishContext = await t.controllerPublish(volume.volumeId, capability);
          const stagingPath = await t.stage(volume, capability, publishContext);
          const targetPath = await t.publish(volume, capability, { stagingPath, publishContext });
          return { volume, capability, publishContext, stagingPath, targetPath };
        };
        it("fails with FAILED_PRECONDITION when published at a second target path", async (t) => {
          const first = await singleWriter(t);
          const second = await t.makeTargetPath();
          // Tracked before the call: a driver that wrongly accepts is unpublished there after
          // the test, so its extra mount cannot break the tests that follow (csi-test v5.5
          // leaves it mounted).
          t.resources.published(first.volume.volumeId, second);
          await expectCode(
            t.node.nodePublishVolume(
              t.publishRequest(first.volume, first.capability, { ...first, targetPath: second }),
            ),
            FAILED_PRECONDITION,
            "NodePublishVolume of a SINGLE_NODE_SINGLE_WRITER volume at a second target path",
          );
        });
        it("publishes again at the same target path (the kubelet republishes)", async (t) => {
          const first = await singleWriter(t);
          await expectOk(
            t.node.nodePublishVolume(t.publishRequest(first.volume, first.capability, first)),
            "NodePublishVolume of a SINGLE_NODE_SINGLE_WRITER volume again at its target path",
          );
        });
        it("publishes at another target path once unpublished from the first", async (t) => {
          const first = await singleWriter(t);
          await expectOk(
            t.node.nodeUnpublishVolume({ volumeId: first.volume.volumeId, targetPath: first.targetPath }),
            "NodeUnpublishVolume",
          );
          t.resources.forget("nodePublish", first.volume.volumeId, first.targetPath);
          await t.publish(first.volume, first.capability, first);
        });
      },
    ),

    ...describe("Node", "NodeUnpublishVolume", {}, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          t.node.nodeUnpublishVolume({ volumeId: "", targetPath: await t.makeTargetPath() }),
          INVALID_ARGUMENT,
          "NodeUnpublishVolume without volume_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the target path is missing", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.node.nodeUnpublishVolume({ volumeId: volume.volumeId, targetPath: "" }),
          INVALID_ARGUMENT,
          "NodeUnpublishVolume without target_path",
        );
      });
      it("succeeds for a target path that was never published", VOLUMES, async (t) => {
        const volume = await t.createVolume();
        await t.node.nodeUnpublishVolume({ volumeId: volume.volumeId, targetPath: await t.makeTargetPath() });
      });
      it(
        "unpublishes and removes the target, and unpublishing again succeeds",
        { ...VOLUMES, mounts: true },
        async (t) => {
          const setup = await t.setupVolume();
          const { volumeId } = setup.volume;
          for (const round of ["", " again"]) {
            await expectOk(
              t.node.nodeUnpublishVolume({ volumeId, targetPath: setup.targetPath }),
              `NodeUnpublishVolume${round}`,
            );
          }
          t.resources.forget("nodePublish", volumeId, setup.targetPath);
          check(
            (await t.settings.paths.check(setup.targetPath)) === "not_found",
            `NodeUnpublishVolume left ${setup.targetPath} behind (the SP MUST delete it)`,
          );
        },
      );
    }),
  ];
}
