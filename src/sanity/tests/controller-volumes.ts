// Controller service, volume provisioning: ControllerGetCapabilities, CreateVolume, DeleteVolume,
// ValidateVolumeCapabilities. Each rule comes from the spec's text or error table for the RPC.

import { GrpcStatus } from "../../csi/index.ts";
import { check, checkCode, expectCode, expectOk, int64 } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";
import type { TestContext } from "../context.ts";

const { INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, OUT_OF_RANGE } = GrpcStatus;

/** Tracks a volume an expected-failure CreateVolume created anyway, so cleanup removes it. */
function trackUnexpected(t: TestContext) {
  return (response: { volume: { volumeId: string } | null }): void => {
    if (response.volume?.volumeId) t.resources.volume(response.volume.volumeId);
  };
}

const CONTROLLER = { requires: ["plugin:CONTROLLER_SERVICE"] } as const;
const CREATE = { requires: ["plugin:CONTROLLER_SERVICE", "controller:CREATE_DELETE_VOLUME"] } as const;

export function controllerVolumeTests(): SanityTest[] {
  return [
    ...describe("Controller", "ControllerGetCapabilities", CONTROLLER, ({ it }) => {
      it("returns only known capabilities, none twice", async (t) => {
        const response = await expectOk(
          t.controller.controllerGetCapabilities({}),
          "ControllerGetCapabilities",
        );
        const names = response.capabilities.map((c) => c.rpc?.type ?? "");
        for (const name of names) {
          check(
            name !== "" && name !== "UNKNOWN",
            `ControllerGetCapabilities: entry with type ${name || "unset"}`,
          );
        }
        const duplicate = names.find((name, i) => names.indexOf(name) !== i);
        check(duplicate === undefined, `ControllerGetCapabilities: ${duplicate} is reported twice`);
      });
    }),

    ...describe("Controller", "CreateVolume", CREATE, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the name is missing", async (t) => {
        await expectCode(
          t.controller.createVolume(t.volumeRequest({ name: "" })),
          INVALID_ARGUMENT,
          "CreateVolume without name",
          trackUnexpected(t),
        );
      });
      it("fails with INVALID_ARGUMENT when volume_capabilities is missing", async (t) => {
        await expectCode(
          t.controller.createVolume(t.volumeRequest({ volumeCapabilities: [] })),
          INVALID_ARGUMENT,
          "CreateVolume without volume_capabilities",
          trackUnexpected(t),
        );
      });
      it("fails with INVALID_ARGUMENT when a capability has no access mode", async (t) => {
        await expectCode(
          t.controller.createVolume(t.volumeRequest({ volumeCapabilities: [{ mount: {} }] })),
          INVALID_ARGUMENT,
          "CreateVolume with a capability without access_mode",
          trackUnexpected(t),
        );
      });
      it("fails with INVALID_ARGUMENT when a capability has no access type", async (t) => {
        await expectCode(
          t.controller.createVolume(
            t.volumeRequest({ volumeCapabilities: [{ accessMode: { mode: "SINGLE_NODE_WRITER" } }] }),
          ),
          INVALID_ARGUMENT,
          "CreateVolume with a capability that is neither mount nor block",
          trackUnexpected(t),
        );
      });
      it("creates a volume and returns a volume id", async (t) => {
        const volume = await t.createVolume();
        check(volume.volumeId !== "", "CreateVolume: volume_id is empty");
      });
      it("creates a volume without a capacity range", async (t) => {
        const volume = await t.createVolume({ capacityRange: null });
        check(int64(volume.capacityBytes) >= 0n, "CreateVolume: negative capacity_bytes");
      });
      it("honours required_bytes", async (t) => {
        const size = BigInt(t.settings.testVolumeSize);
        const volume = await t.createVolume({ capacityRange: { requiredBytes: String(size) } });
        const capacity = int64(volume.capacityBytes);
        check(
          capacity === 0n || capacity >= size,
          `CreateVolume: capacity_bytes ${capacity} < required_bytes ${size}`,
        );
      });
      it("honours limit_bytes or answers OUT_OF_RANGE", async (t) => {
        const size = String(t.settings.testVolumeSize);
        const request = t.volumeRequest({ capacityRange: { requiredBytes: size, limitBytes: size } });
        let capacity: bigint;
        try {
          const response = await t.controller.createVolume(request);
          if (response.volume) t.resources.volume(response.volume.volumeId);
          capacity = int64(response.volume?.capacityBytes);
        } catch (error) {
          checkCode(error, OUT_OF_RANGE, "CreateVolume with required_bytes = limit_bytes");
          return;
        }
        check(
          capacity === 0n || capacity === BigInt(size),
          `CreateVolume: capacity_bytes ${capacity}, want exactly ${size} (required = limit)`,
        );
      });
      it("rejects limit_bytes below required_bytes", async (t) => {
        const size = t.settings.testVolumeSize;
        await expectCode(
          t.controller.createVolume(
            t.volumeRequest({ capacityRange: { requiredBytes: String(size * 2), limitBytes: String(size) } }),
          ),
          [INVALID_ARGUMENT, OUT_OF_RANGE],
          "CreateVolume with limit_bytes < required_bytes",
          trackUnexpected(t),
        );
      });
      it(
        "creates volumes with SINGLE_NODE_SINGLE_WRITER and SINGLE_NODE_MULTI_WRITER",
        { requires: ["controller:SINGLE_NODE_MULTI_WRITER"] },
        async (t) => {
          await t.createVolume({ volumeCapabilities: [t.mountCapability("SINGLE_NODE_SINGLE_WRITER")] });
          await t.createVolume({ volumeCapabilities: [t.mountCapability("SINGLE_NODE_MULTI_WRITER")] });
        },
      );
      it("accepts a name of 128 characters", async (t) => {
        const name = t.uniqueName("long").padEnd(128, "x");
        await t.createVolume({ name });
      });
      it("is idempotent: the same request answers the same volume", async (t) => {
        const request = t.volumeRequest();
        const first = await t.createVolume(request);
        const second = await t.createVolume(request);
        check(
          first.volumeId === second.volumeId,
          `CreateVolume again: volume_id ${second.volumeId}, first ${first.volumeId}`,
        );
        check(
          first.capacityBytes === second.capacityBytes,
          `CreateVolume again: capacity_bytes ${second.capacityBytes}, first ${first.capacityBytes}`,
        );
      });
      it("fails with ALREADY_EXISTS for the same name and an incompatible size", async (t) => {
        const size = t.settings.testVolumeSize;
        const request = t.volumeRequest({
          capacityRange: { requiredBytes: String(size), limitBytes: String(size) },
        });
        try {
          await t.createVolume(request);
        } catch {
          t.skip("the driver cannot create a volume of exactly --test-volume-size bytes");
        }
        await expectCode(
          t.controller.createVolume({
            ...request,
            capacityRange: { requiredBytes: String(size * 2), limitBytes: String(size * 2) },
          }),
          ALREADY_EXISTS,
          "CreateVolume with an existing name and a different size",
          trackUnexpected(t),
        );
      });
      it(
        "fails with NOT_FOUND for a source snapshot that does not exist",
        { requires: ["controller:CREATE_DELETE_SNAPSHOT"] },
        async (t) => {
          await expectCode(
            t.controller.createVolume(
              t.volumeRequest({
                volumeContentSource: { snapshot: { snapshotId: "sanity-no-such-snapshot" } },
              }),
            ),
            NOT_FOUND,
            "CreateVolume from a missing snapshot",
            trackUnexpected(t),
          );
        },
      );
      it(
        "fails with NOT_FOUND for a source volume that does not exist",
        { requires: ["controller:CLONE_VOLUME"] },
        async (t) => {
          await expectCode(
            t.controller.createVolume(
              t.volumeRequest({ volumeContentSource: { volume: { volumeId: "sanity-no-such-volume" } } }),
            ),
            NOT_FOUND,
            "CreateVolume from a missing volume",
            trackUnexpected(t),
          );
        },
      );
      it("clones a volume and reports the source", { requires: ["controller:CLONE_VOLUME"] }, async (t) => {
        const source = await t.createVolume();
        const clone = await t.createVolume({
          volumeContentSource: { volume: { volumeId: source.volumeId } },
        });
        check(clone.volumeId !== source.volumeId, "CreateVolume clone: the clone has the source's volume_id");
        const reported = clone.contentSource?.volume?.volumeId;
        check(
          reported === undefined || reported === source.volumeId,
          `CreateVolume clone: content_source names volume ${reported}, want ${source.volumeId}`,
        );
      });
      it(
        "fails with ALREADY_EXISTS for the same name and another content source",
        { requires: ["controller:CLONE_VOLUME"] },
        async (t) => {
          const source = await t.createVolume();
          const request = t.volumeRequest();
          await t.createVolume(request);
          await expectCode(
            t.controller.createVolume({
              ...request,
              volumeContentSource: { volume: { volumeId: source.volumeId } },
            }),
            ALREADY_EXISTS,
            "CreateVolume with an existing name and a content source it was not made from",
            trackUnexpected(t),
          );
        },
      );
      it(
        "returns accessible_topology",
        { requires: ["plugin:VOLUME_ACCESSIBILITY_CONSTRAINTS"] },
        async (t) => {
          const volume = await t.createVolume();
          check(volume.accessibleTopology.length > 0, "CreateVolume: accessible_topology is empty");
          for (const topology of volume.accessibleTopology) {
            check(Object.keys(topology.segments).length > 0, "CreateVolume: a topology has no segments");
          }
        },
      );
      it(
        "places the volume in the node's topology when asked",
        { requires: ["plugin:VOLUME_ACCESSIBILITY_CONSTRAINTS"] },
        async (t) => {
          const info = await t.nodeInfo();
          const segments = info.accessibleTopology?.segments ?? {};
          check(Object.keys(segments).length > 0, "NodeGetInfo: no accessible_topology");
          const volume = await t.createVolume({
            accessibilityRequirements: { requisite: [{ segments }], preferred: [{ segments }] },
          });
          const wanted = JSON.stringify(Object.entries(segments).sort());
          check(
            volume.accessibleTopology.some(
              (topology) => JSON.stringify(Object.entries(topology.segments).sort()) === wanted,
            ),
            `CreateVolume: accessible_topology ${JSON.stringify(volume.accessibleTopology)} lacks the requisite ${wanted}`,
          );
        },
      );
    }),

    ...describe("Controller", "DeleteVolume", CREATE, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          t.controller.deleteVolume({ volumeId: "", secrets: t.secrets.DeleteVolumeSecret ?? {} }),
          INVALID_ARGUMENT,
          "DeleteVolume without volume_id",
        );
      });
      it("succeeds for a volume id that does not exist", async (t) => {
        await expectOk(
          t.controller.deleteVolume({
            volumeId: "sanity-no-such-volume",
            secrets: t.secrets.DeleteVolumeSecret ?? {},
          }),
          "DeleteVolume of an unknown volume",
        );
      });
      it("deletes a volume, and deleting it again succeeds", async (t) => {
        const volume = await t.createVolume();
        await t.deleteVolume(volume.volumeId);
        await t.deleteVolume(volume.volumeId);
      });
    }),

    ...describe("Controller", "ValidateVolumeCapabilities", CONTROLLER, ({ it }) => {
      it("fails with INVALID_ARGUMENT when the volume id is missing", async (t) => {
        await expectCode(
          t.controller.validateVolumeCapabilities({
            volumeId: "",
            volumeCapabilities: [t.mountCapability()],
            secrets: t.secrets.ControllerValidateVolumeCapabilitiesSecret ?? {},
          }),
          INVALID_ARGUMENT,
          "ValidateVolumeCapabilities without volume_id",
        );
      });
      it(
        "fails with INVALID_ARGUMENT when volume_capabilities is missing",
        { requires: ["controller:CREATE_DELETE_VOLUME"] },
        async (t) => {
          const volume = await t.createVolume();
          await expectCode(
            t.controller.validateVolumeCapabilities({
              volumeId: volume.volumeId,
              volumeCapabilities: [],
              secrets: t.secrets.ControllerValidateVolumeCapabilitiesSecret ?? {},
            }),
            INVALID_ARGUMENT,
            "ValidateVolumeCapabilities without volume_capabilities",
          );
        },
      );
      it("fails with NOT_FOUND for a volume that does not exist", async (t) => {
        await expectCode(
          t.controller.validateVolumeCapabilities({
            volumeId: "sanity-no-such-volume",
            volumeCapabilities: [t.mountCapability()],
            secrets: t.secrets.ControllerValidateVolumeCapabilitiesSecret ?? {},
          }),
          NOT_FOUND,
          "ValidateVolumeCapabilities of an unknown volume",
        );
      });
      it(
        "confirms the capabilities a volume was created with, on every call",
        { requires: ["controller:CREATE_DELETE_VOLUME"] },
        async (t) => {
          const capability = t.mountCapability();
          const volume = await t.createVolume({ volumeCapabilities: [capability] });
          for (const round of ["", " (again)"]) {
            const response = await expectOk(
              t.controller.validateVolumeCapabilities({
                volumeId: volume.volumeId,
                volumeContext: volume.volumeContext,
                volumeCapabilities: [capability],
                parameters: t.settings.parameters,
                secrets: t.secrets.ControllerValidateVolumeCapabilitiesSecret ?? {},
              }),
              `ValidateVolumeCapabilities${round}`,
            );
            check(
              response.confirmed !== null,
              `ValidateVolumeCapabilities${round}: not confirmed (${response.message || "no message"})`,
            );
            check(
              response.confirmed.volumeCapabilities.some(
                (c) => c.accessMode?.mode === "SINGLE_NODE_WRITER" && c.mount !== undefined,
              ),
              `ValidateVolumeCapabilities${round}: confirmed capabilities lack the requested mount SINGLE_NODE_WRITER`,
            );
          }
        },
      );
    }),
  ];
}
