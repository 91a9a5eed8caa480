// What a sanity test sees: the driver's services, its capabilities, the run's settings, a
// resource tracker, and helpers that perform the common steps of a volume's life the way a CO
// does (create → controller publish → stage → publish), each step tracked for cleanup.
//
// The mount gate lives here: when a test that mounts gets FAILED_PRECONDITION from NodeStage or
// NodePublish, the node may not mount (e.g. not root); the test ends skipped with the driver's
// reason and the runner skips later mounting tests with the same reason.

import type { PathOps } from "./paths.ts";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { GrpcStatus } from "../csi/index.ts";
import type { CsiClient } from "../csi/index.ts";
import type { SanitySecrets } from "./config.ts";
import { callFailure, check, expectOk, grpcCode, grpcDetails } from "./expect.ts";
import { capabilityGate, MountPrivilegeMissing, SkipTest } from "./gates.ts";
import type { Capabilities, Requirement } from "./gates.ts";
import type { ResourceTracker } from "./resources.ts";
import type {
  AccessModeName,
  CreateVolumeRequest,
  NodeInfo,
  NodePublishRequest,
  NodeStageRequest,
  Snapshot,
  TopologyRequirement,
  Volume,
  VolumeCapability,
} from "./types.ts";

/** Settings of the run, resolved from SanityOptions. */
export interface SanitySettings {
  stagingDir: string;
  targetDir: string;
  testVolumeSize: number;
  testVolumeExpandSize: number;
  secrets: SanitySecrets;
  parameters: Record<string, string>;
  /** Empty when none were given. */
  mutableParameters: Record<string, string>;
  /** Parameters for every CreateSnapshot; empty when none were given. */
  snapshotParameters: Record<string, string>;
  /** accessibility_requirements of every CreateVolume; unset when none were given. */
  topologyRequirements?: TopologyRequirement;
  /** How staging and target paths are made, removed and inspected (paths.ts). */
  paths: PathOps;
}

/** State shared by all tests of one run. */
export interface SanityEnvironment {
  node: CsiClient;
  controller: CsiClient;
  caps: Capabilities;
  settings: SanitySettings;
  /** Set when --endpoint serves no Node service: Node tests, and tests needing the node, skip with it. */
  nodeUnavailable?: string;
  /** Set once the node service said it may not mount; later mounting tests skip with it. */
  mountUnavailable?: string;
  /** NodeGetInfo's answer, fetched once. */
  nodeInfo?: NodeInfo;
}

/** A volume taken through the CO's setup steps by `setupVolume`. */
export interface PublishedVolume {
  volume: Volume;
  capability: VolumeCapability;
  publishContext: Record<string, string>;
  stagingPath: string | undefined;
  targetPath: string;
}

export class TestContext {
  readonly identity: CsiClient["identity"];
  readonly controller: CsiClient["controller"];
  readonly node: CsiClient["node"];
  readonly group: CsiClient["groupController"];
  /** The SnapshotMetadata service, on the controller endpoint. */
  readonly metadata: CsiClient["snapshotMetadata"];
  readonly caps: Capabilities;
  readonly settings: SanitySettings;
  readonly secrets: SanitySecrets;
  readonly resources: ResourceTracker;
  readonly signal: AbortSignal;
  readonly #env: SanityEnvironment;
  readonly #mounts: boolean;

  constructor(options: {
    env: SanityEnvironment;
    /** The test mounts: FAILED_PRECONDITION from NodeStage/NodePublish means "may not mount". */
    mounts: boolean;
    resources: ResourceTracker;
    signal: AbortSignal;
  }) {
    const { env } = options;
    this.#env = env;
    this.#mounts = options.mounts;
    this.identity = env.node.identity;
    this.controller = env.controller.controller;
    this.node = env.node.node;
    this.group = env.controller.groupController;
    this.metadata = env.controller.snapshotMetadata;
    this.caps = env.caps;
    this.settings = env.settings;
    this.secrets = env.settings.secrets;
    this.resources = options.resources;
    this.signal = options.signal;
  }

  /** True when the driver meets the requirement (same syntax as a test's `requires`). */
  has(requirement: Requirement): boolean {
    return capabilityGate([requirement], this.caps) === undefined;
  }

  skip(reason: string): never {
    throw new SkipTest(reason);
  }

  /** A name unique to this run, e.g. for CreateVolume: `sanity-<prefix>-<random>`. */
  uniqueName(prefix: string): string {
    return `sanity-${prefix}-${randomBytes(6).toString("hex")}`;
  }

  mountCapability(mode: AccessModeName = "SINGLE_NODE_WRITER"): VolumeCapability {
    return { accessMode: { mode }, mount: { fsType: "", mountFlags: [] } };
  }

  blockCapability(mode: AccessModeName = "SINGLE_NODE_WRITER"): VolumeCapability {
    return { accessMode: { mode }, block: {} };
  }

  /** The configured mutable parameters; skips the test when none were given. */
  requireMutableParameters(): Record<string, string> {
    if (Object.keys(this.settings.mutableParameters).length === 0) {
      this.skip("no mutable parameters configured (--mutable-parameters FILE)");
    }
    return this.settings.mutableParameters;
  }

  /** The request CreateVolume gets unless a test overrides fields. */
  volumeRequest(overrides: Partial<CreateVolumeRequest> = {}): CreateVolumeRequest {
    return {
      name: this.uniqueName("volume"),
      volumeCapabilities: [this.mountCapability()],
      capacityRange: { requiredBytes: String(this.settings.testVolumeSize) },
      parameters: { ...this.settings.parameters },
      secrets: this.secrets.CreateVolumeSecret ?? {},
      ...(this.settings.topologyRequirements
        ? { accessibilityRequirements: this.settings.topologyRequirements }
        : {}),
      ...overrides,
    };
  }

  /** CreateVolume that must succeed; the volume is deleted after the test. */
  async createVolume(overrides: Partial<CreateVolumeRequest> = {}): Promise<Volume> {
    const request = this.volumeRequest(overrides);
    const response = await expectOk(this.controller.createVolume(request), `CreateVolume ${request.name}`);
    const volume = response.volume;
    check(volume?.volumeId, `CreateVolume ${request.name}: response has no volume id`);
    this.resources.volume(volume.volumeId);
    return volume;
  }

  /** DeleteVolume that must succeed; stops tracking the volume. */
  async deleteVolume(volumeId: string): Promise<void> {
    await expectOk(
      this.controller.deleteVolume({ volumeId, secrets: this.secrets.DeleteVolumeSecret ?? {} }),
      `DeleteVolume ${volumeId}`,
    );
    this.resources.forget("volume", volumeId);
  }

  /** CreateSnapshot that must succeed; the snapshot is deleted after the test. */
  async createSnapshot(sourceVolumeId: string, name = this.uniqueName("snapshot")): Promise<Snapshot> {
    const response = await expectOk(
      this.controller.createSnapshot({
        name,
        sourceVolumeId,
        secrets: this.secrets.CreateSnapshotSecret ?? {},
        parameters: { ...this.settings.snapshotParameters },
      }),
      `CreateSnapshot ${name}`,
    );
    const snapshot = response.snapshot;
    check(snapshot?.snapshotId, `CreateSnapshot ${name}: response has no snapshot id`);
    this.resources.snapshot(snapshot.snapshotId);
    return snapshot;
  }

  async deleteSnapshot(snapshotId: string): Promise<void> {
    await expectOk(
      this.controller.deleteSnapshot({ snapshotId, secrets: this.secrets.DeleteSnapshotSecret ?? {} }),
      `DeleteSnapshot ${snapshotId}`,
    );
    this.resources.forget("snapshot", snapshotId);
  }

  /**
   * What NodeGetInfo reports (asked once per run). A test that needs it skips when the node
   * endpoint serves no Node service (a controller-only --endpoint).
   */
  async nodeInfo(): Promise<NodeInfo> {
    if (this.#env.nodeUnavailable !== undefined) this.skip(this.#env.nodeUnavailable);
    if (this.#env.nodeInfo === undefined) {
      const info = await expectOk(this.node.nodeGetInfo({}), "NodeGetInfo");
      check(info.nodeId, "NodeGetInfo: node_id is empty");
      this.#env.nodeInfo = info;
    }
    return this.#env.nodeInfo;
  }

  /** The node id NodeGetInfo reports. */
  async nodeId(): Promise<string> {
    return (await this.nodeInfo()).nodeId;
  }

  /** A fresh, existing staging directory (the CO creates it, per the spec). */
  async makeStagingPath(): Promise<string> {
    const path = await this.settings.paths.create(
      join(this.settings.stagingDir, randomBytes(6).toString("hex")),
      "staging",
    );
    this.resources.path(path, "staging");
    return path;
  }

  /** A fresh target path whose parent exists; the driver creates the target itself. */
  async makeTargetPath(): Promise<string> {
    const parent = await this.settings.paths.create(
      join(this.settings.targetDir, randomBytes(6).toString("hex")),
      "target",
    );
    this.resources.path(parent, "target");
    const target = join(parent, "target");
    this.resources.path(target, "target");
    return target;
  }

  /**
   * A fresh target path that exists as an empty directory where nothing is published: a
   * NOT_FOUND check against it cannot pass merely because the path is missing.
   */
  async makeExistingTargetPath(): Promise<string> {
    const target = await this.makeTargetPath();
    const made = await this.settings.paths.create(target, "target");
    this.resources.path(made, "target");
    return made;
  }

  /** ControllerPublishVolume to this node when the driver has that step; returns publish_context. */
  async controllerPublish(
    volumeId: string,
    capability: VolumeCapability,
    readonly = false,
  ): Promise<Record<string, string>> {
    if (!this.has("controller:PUBLISH_UNPUBLISH_VOLUME")) return {};
    const nodeId = await this.nodeId();
    const response = await expectOk(
      this.controller.controllerPublishVolume({
        volumeId,
        nodeId,
        volumeCapability: capability,
        readonly,
        secrets: this.secrets.ControllerPublishVolumeSecret ?? {},
        volumeContext: {},
      }),
      `ControllerPublishVolume ${volumeId}`,
    );
    this.resources.controllerPublished(volumeId, nodeId);
    return response.publishContext ?? {};
  }

  /** NodeStageVolume when the node has that step (else undefined); mount-gated. */
  async stage(
    volume: Volume,
    capability: VolumeCapability,
    publishContext: Record<string, string>,
  ): Promise<string | undefined> {
    if (!this.has("node:STAGE_UNSTAGE_VOLUME")) return undefined;
    const stagingTargetPath = await this.makeStagingPath();
    const request: NodeStageRequest = {
      volumeId: volume.volumeId,
      publishContext,
      stagingTargetPath,
      volumeCapability: capability,
      secrets: this.secrets.NodeStageVolumeSecret ?? {},
      volumeContext: volume.volumeContext ?? {},
    };
    this.resources.staged(volume.volumeId, stagingTargetPath);
    await this.mountGated(this.node.nodeStageVolume(request), `NodeStageVolume ${volume.volumeId}`);
    return stagingTargetPath;
  }

  /** NodePublishVolume to a fresh target path; mount-gated. */
  async publish(
    volume: Volume,
    capability: VolumeCapability,
    options: { stagingPath: string | undefined; publishContext: Record<string, string>; readonly?: boolean },
  ): Promise<string> {
    const targetPath = await this.makeTargetPath();
    const request: NodePublishRequest = this.publishRequest(volume, capability, { ...options, targetPath });
    this.resources.published(volume.volumeId, targetPath);
    await this.mountGated(this.node.nodePublishVolume(request), `NodePublishVolume ${volume.volumeId}`);
    return targetPath;
  }

  publishRequest(
    volume: Volume,
    capability: VolumeCapability,
    options: {
      stagingPath: string | undefined;
      publishContext: Record<string, string>;
      targetPath: string;
      readonly?: boolean;
    },
  ): NodePublishRequest {
    return {
      volumeId: volume.volumeId,
      publishContext: options.publishContext,
      stagingTargetPath: options.stagingPath ?? "",
      targetPath: options.targetPath,
      volumeCapability: capability,
      readonly: options.readonly ?? false,
      secrets: this.secrets.NodePublishVolumeSecret ?? {},
      volumeContext: volume.volumeContext ?? {},
    };
  }

  /** Create → controller publish → stage → publish, as a CO sets a volume up for a workload. */
  async setupVolume(options: { block?: boolean; readonly?: boolean } = {}): Promise<PublishedVolume> {
    const capability = options.block ? this.blockCapability() : this.mountCapability();
    const volume = await this.createVolume({ volumeCapabilities: [capability] });
    const publishContext = await this.controllerPublish(
      volume.volumeId,
      capability,
      options.readonly ?? false,
    );
    const stagingPath = await this.stage(volume, capability, publishContext);
    const targetPath = await this.publish(volume, capability, {
      stagingPath,
      publishContext,
      readonly: options.readonly ?? false,
    });
    return { volume, capability, publishContext, stagingPath, targetPath };
  }

  /** Tears a setupVolume down in CO order, each step required to succeed. */
  async teardownVolume(published: PublishedVolume): Promise<void> {
    const { volume, targetPath, stagingPath } = published;
    const volumeId = volume.volumeId;
    await expectOk(
      this.node.nodeUnpublishVolume({ volumeId, targetPath }),
      `NodeUnpublishVolume ${volumeId}`,
    );
    this.resources.forget("nodePublish", volumeId, targetPath);
    if (stagingPath !== undefined) {
      await expectOk(
        this.node.nodeUnstageVolume({ volumeId, stagingTargetPath: stagingPath }),
        `NodeUnstageVolume ${volumeId}`,
      );
      this.resources.forget("nodeStage", volumeId, stagingPath);
    }
    if (this.has("controller:PUBLISH_UNPUBLISH_VOLUME")) {
      const nodeId = await this.nodeId();
      await expectOk(
        this.controller.controllerUnpublishVolume({
          volumeId,
          nodeId,
          secrets: this.secrets.ControllerUnpublishVolumeSecret ?? {},
        }),
        `ControllerUnpublishVolume ${volumeId}`,
      );
      this.resources.forget("controllerPublish", volumeId, nodeId);
    }
    await this.deleteVolume(volumeId);
  }

  /**
   * Awaits a node call that must succeed; in a mounting test, FAILED_PRECONDITION ends the test
   * as skipped for missing mount privilege (and later mounting tests skip too).
   */
  async mountGated<T>(call: Promise<T>, what: string): Promise<T> {
    try {
      return await call;
    } catch (error) {
      if (this.#mounts && grpcCode(error) === GrpcStatus.FAILED_PRECONDITION) {
        const reason = `needs mount privilege: ${grpcDetails(error)}`;
        this.#env.mountUnavailable = reason;
        throw new MountPrivilegeMissing(reason);
      }
      throw callFailure(what, error);
    }
  }
}
