// Controller service, attachment and changes: ControllerPublishVolume,
// ControllerUnpublishVolume, ControllerExpandVolume, ControllerModifyVolume.

import { GrpcStatus } from "../../csi/index.ts";
import type { TestContext } from "../context.ts";
import { check, expectCode, expectOk, int64 } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";

const { INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION } = GrpcStatus;

const PUBLISH = {
  requires: [
    "plugin:CONTROLLER_SERVICE",
    "controller:PUBLISH_UNPUBLISH_VOLUME",
    "controller:CREATE_DELETE_VOLUME",
  ],
} as const;

function publishRequest(t: TestContext, volumeId: string, nodeId: string) {
  return {
    volumeId,
    nodeId,
    volumeCapability: t.mountCapability(),
    readonly: false,
    secrets: t.secrets.ControllerPublishVolumeSecret ?? {},
    volumeContext: {},
  };
}

function unpublishRequest(t: TestContext, volumeId: string, nodeId: string) {
  return { volumeId, nodeId, secrets: t.secrets.ControllerUnpublishVolumeSecret ?? {} };
}

export function controllerPublishTests(): SanityTest[] {
  return [
    ...describe("Controller", "ControllerPublishVolume", PUBLISH, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          t.controller.controllerPublishVolume(publishRequest(t, "", await t.nodeId())),
          INVALID_ARGUMENT,
          "ControllerPublishVolume without volume_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the node id is missing", async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.controller.controllerPublishVolume(publishRequest(t, volume.volumeId, "")),
          INVALID_ARGUMENT,
          "ControllerPublishVolume without node_id",
        );
      });
      it("fails with INVALID_ARGUMENT when the volume capability is missing", async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.controller.controllerPublishVolume({
            ...publishRequest(t, volume.volumeId, await t.nodeId()),
            volumeCapability: null,
          }),
          INVALID_ARGUMENT,
          "ControllerPublishVolume without volume_capability",
        );
      });
      it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
        await expectCode(
          t.controller.controllerPublishVolume(publishRequest(t, "sanity-no-such-volume", await t.nodeId())),
          NOT_FOUND,
          "ControllerPublishVolume of an unknown volume",
        );
      });
      it("fails with NOT_FOUND for a node that does not exist", async (t) => {
        const volume = await t.createVolume();
        await expectCode(
          t.controller.controllerPublishVolume(publishRequest(t, volume.volumeId, "sanity-no-such-node")),
          NOT_FOUND,
          "ControllerPublishVolume to an unknown node",
          () => t.resources.controllerPublished(volume.volumeId, "sanity-no-such-node"),
        );
      });
      it("publishes, and publishing again answers the same publish_context", async (t) => {
        const volume = await t.createVolume();
        const nodeId = await t.nodeId();
        const first = await expectOk(
          t.controller.controllerPublishVolume(publishRequest(t, volume.volumeId, nodeId)),
          "ControllerPublishVolume",
        );
        t.resources.controllerPublished(volume.volumeId, nodeId);
        const second = await expectOk(
          t.controller.controllerPublishVolume(publishRequest(t, volume.volumeId, nodeId)),
          "ControllerPublishVolume again",
        );
        check(
          JSON.stringify(Object.entries(first.publishContext).sort()) ===
            JSON.stringify(Object.entries(second.publishContext).sort()),
          "ControllerPublishVolume again: publish_context differs from the first answer",
        );
      });
      it(
        "fails with ALREADY_EXISTS when published again with another readonly flag",
        { requires: ["controller:PUBLISH_READONLY"] },
        async (t) => {
          const volume = await t.createVolume();
          const nodeId = await t.nodeId();
          await t.controllerPublish(volume.volumeId, t.mountCapability(), false);
          await expectCode(
            t.controller.controllerPublishVolume({
              ...publishRequest(t, volume.volumeId, nodeId),
              readonly: true,
            }),
            ALREADY_EXISTS,
            "ControllerPublishVolume read-only after a read-write publish to the same node",
          );
        },
      );
      it("publishes read-only", { requires: ["controller:PUBLISH_READONLY"] }, async (t) => {
        const capability = t.mountCapability("SINGLE_NODE_READER_ONLY");
        const volume = await t.createVolume({ volumeCapabilities: [capability] });
        await t.controllerPublish(volume.volumeId, capability, true);
      });
    }),

    ...describe("Controller", "ControllerUnpublishVolume", PUBLISH, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          t.controller.controllerUnpublishVolume(unpublishRequest(t, "", await t.nodeId())),
          INVALID_ARGUMENT,
          "ControllerUnpublishVolume without volume_id",
        );
      });
      it("succeeds for a volume that is not published", async (t) => {
        const volume = await t.createVolume();
        await expectOk(
          t.controller.controllerUnpublishVolume(unpublishRequest(t, volume.volumeId, await t.nodeId())),
          "ControllerUnpublishVolume of a volume never published",
        );
      });
      it("succeeds for a volume that does not exist", async (t) => {
        await expectOk(
          t.controller.controllerUnpublishVolume(
            unpublishRequest(t, "sanity-no-such-volume", await t.nodeId()),
          ),
          "ControllerUnpublishVolume of an unknown volume",
        );
      });
      it("unpublishes, and unpublishing again succeeds", async (t) => {
        const volume = await t.createVolume();
        const nodeId = await t.nodeId();
        await t.controllerPublish(volume.volumeId, t.mountCapability());
        for (const round of ["", " again"]) {
          await expectOk(
            t.controller.controllerUnpublishVolume(unpublishRequest(t, volume.volumeId, nodeId)),
            `ControllerUnpublishVolume${round}`,
          );
        }
        t.resources.forget("controllerPublish", volume.volumeId, nodeId);
      });
      it("unpublishes from every node when node_id is empty", async (t) => {
        const volume = await t.createVolume();
        const nodeId = await t.nodeId();
        await t.controllerPublish(volume.volumeId, t.mountCapability());
        await expectOk(
          t.controller.controllerUnpublishVolume(unpublishRequest(t, volume.volumeId, "")),
          "ControllerUnpublishVolume with empty node_id",
        );
        t.resources.forget("controllerPublish", volume.volumeId, nodeId);
        // Publishing again must work: the volume is attached nowhere.
        await t.controllerPublish(volume.volumeId, t.mountCapability());
      });
    }),

    ...describe(
      "Controller",
      "ControllerExpandVolume",
      { requires: ["plugin:CONTROLLER_SERVICE", "controller:EXPAND_VOLUME"] },
      ({ it }) => {
        const expand = (t: TestContext, volumeId: string, bytes: number | undefined) =>
          t.controller.controllerExpandVolume({
            volumeId,
            capacityRange: bytes === undefined ? null : { requiredBytes: String(bytes) },
            secrets: t.secrets.ControllerExpandVolumeSecret ?? {},
            volumeCapability: t.mountCapability(),
          });
        it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
          await expectCode(
            expand(t, "", t.settings.testVolumeExpandSize),
            INVALID_ARGUMENT,
            "ControllerExpandVolume without volume_id",
          );
        });
        it(
          "fails with INVALID_ARGUMENT when the capacity range is missing",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            const volume = await t.createVolume();
            await expectCode(
              expand(t, volume.volumeId, undefined),
              INVALID_ARGUMENT,
              "ControllerExpandVolume without capacity_range",
            );
          },
        );
        it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
          await expectCode(
            expand(t, "sanity-no-such-volume", t.settings.testVolumeExpandSize),
            NOT_FOUND,
            "ControllerExpandVolume of an unknown volume",
          );
        });
        it(
          "expands a volume to at least the requested size, idempotently",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            const volume = await t.createVolume();
            const want = BigInt(t.settings.testVolumeExpandSize);
            for (const round of ["", " again"]) {
              const response = await expectOk(
                expand(t, volume.volumeId, t.settings.testVolumeExpandSize),
                `ControllerExpandVolume${round}`,
              );
              check(
                int64(response.capacityBytes) >= want,
                `ControllerExpandVolume${round}: capacity_bytes ${response.capacityBytes} < requested ${want}`,
              );
            }
          },
        );
        it(
          "succeeds when the volume is already at least as large",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            const volume = await t.createVolume();
            const response = await expectOk(
              expand(t, volume.volumeId, t.settings.testVolumeSize),
              "ControllerExpandVolume to the current size",
            );
            check(
              int64(response.capacityBytes) >= BigInt(t.settings.testVolumeSize),
              `ControllerExpandVolume: capacity_bytes ${response.capacityBytes} shrank below ${t.settings.testVolumeSize}`,
            );
          },
        );
        it(
          "refuses to expand a published volume without ONLINE expansion",
          {
            requires: [
              "controller:CREATE_DELETE_VOLUME",
              "controller:PUBLISH_UNPUBLISH_VOLUME",
              "plugin:OFFLINE",
              "!plugin:ONLINE",
            ],
          },
          async (t) => {
            const volume = await t.createVolume();
            await t.controllerPublish(volume.volumeId, t.mountCapability());
            await expectCode(
              expand(t, volume.volumeId, t.settings.testVolumeExpandSize),
              FAILED_PRECONDITION,
              "ControllerExpandVolume of a published volume (OFFLINE expansion only)",
            );
          },
        );
      },
    ),

    ...describe(
      "Controller",
      "ControllerModifyVolume",
      { requires: ["plugin:CONTROLLER_SERVICE", "controller:MODIFY_VOLUME"] },
      ({ it }) => {
        const modify = (t: TestContext, volumeId: string, mutableParameters: Record<string, string>) =>
          t.controller.controllerModifyVolume({
            volumeId,
            mutableParameters,
            secrets: t.secrets.ControllerModifyVolumeSecret ?? {},
          });
        it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
          await expectCode(
            modify(t, "", { "sanity.csikit.io/key": "value" }),
            INVALID_ARGUMENT,
            "ControllerModifyVolume without volume_id",
          );
        });
        it(
          "fails with INVALID_ARGUMENT when mutable_parameters is empty",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            const volume = await t.createVolume();
            await expectCode(
              modify(t, volume.volumeId, {}),
              INVALID_ARGUMENT,
              "ControllerModifyVolume without mutable_parameters",
            );
          },
        );
        it(
          "modifies a volume, and modifying it again succeeds",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            const mutable = t.requireMutableParameters();
            const volume = await t.createVolume();
            for (const round of ["", " again"]) {
              await expectOk(modify(t, volume.volumeId, mutable), `ControllerModifyVolume${round}`);
            }
          },
        );
        it(
          "creates a volume with mutable_parameters",
          { requires: ["controller:CREATE_DELETE_VOLUME"] },
          async (t) => {
            await t.createVolume({ mutableParameters: t.requireMutableParameters() });
          },
        );
        it("fails with NOT_FOUND or INVALID_ARGUMENT for a volume that does not exist", async (t) => {
          await expectCode(
            modify(t, "sanity-no-such-volume", { "sanity.csikit.io/key": "value" }),
            [NOT_FOUND, INVALID_ARGUMENT],
            "ControllerModifyVolume of an unknown volume",
          );
        });
      },
    ),
  ];
}
