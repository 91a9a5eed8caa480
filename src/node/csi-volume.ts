// The CSI volume plugin of the node (the kubelet's csi_attacher/csi_mounter/csi_block): turns a
// VolumeSpec into NodeStageVolume / NodePublishVolume / NodeUnpublishVolume /
// NodeUnstageVolume / NodeExpandVolume calls at the kubelet's paths, writing vol_data.json
// before each mount call (so a restart finds half-done work) and removing it after each
// unmount. Secrets are read from the API server per call and never logged. fsGroup follows
// the CSIDriver's fsGroupPolicy: delegated through volume_mount_group when the driver has
// VOLUME_MOUNT_GROUP, otherwise applied here (chown/chmod) where the policy allows.

import { chmod, chown, lstat, mkdir, readdir, rm, rmdir, symlink, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { CSIDriver, PersistentVolumeAccessMode, Pod, Secret, SecretReference } from "../api/index.ts";
import { GVR } from "../api/index.ts";
import { CsikitError, errorMessage, isErrno } from "../base/index.ts";
import type { VolumeCapabilityInput, VolumeCapability_AccessMode_Mode } from "../csi/index.ts";
import { isNotFound, type KubeClient } from "../kube/index.ts";
import type { FeatureGates } from "../migration/index.ts";
import type { PublishedVolume, StagedVolume } from "./actual-state.ts";
import { gateOn, NODE_GATES } from "./feature-gates.ts";
import { seLinuxMountLabel, withSELinuxMountOption } from "./selinux.ts";
import type { DesiredPodVolume, VolumeSpec } from "./desired-state.ts";
import type { RegisteredDriver } from "./drivers.ts";
import {
  attachmentName,
  migratedVolData,
  type KubeletPaths,
  type PublishVolData,
  type StagingVolData,
  VOL_DATA_FILE,
  writeJsonFile,
} from "./paths.ts";

export const POD_INFO_KEYS = {
  podName: "csi.storage.k8s.io/pod.name",
  podNamespace: "csi.storage.k8s.io/pod.namespace",
  podUID: "csi.storage.k8s.io/pod.uid",
  serviceAccountName: "csi.storage.k8s.io/serviceAccount.name",
  ephemeral: "csi.storage.k8s.io/ephemeral",
} as const;

/**
 * Key of the pod's ServiceAccount tokens (CSIDriver.spec.tokenRequests): in volume_context, or
 * in secrets when the CSIDriver sets serviceAccountTokenInSecrets.
 */
export const SERVICE_ACCOUNT_TOKENS_KEY = "csi.storage.k8s.io/serviceAccount.tokens";

/** PV access modes → CSI access mode (FACTS.md "Access-mode mapping"). */
export function csiAccessMode(
  modes: readonly PersistentVolumeAccessMode[],
  singleNodeMultiWriter: boolean,
): VolumeCapability_AccessMode_Mode {
  const set = new Set(modes);
  if (set.has("ReadWriteOncePod")) {
    if (set.size > 1)
      throw new CsikitError(
        "CSIKIT_ERR_ACCESS_MODE",
        "ReadWriteOncePod may not be combined with other access modes",
      );
    return singleNodeMultiWriter ? "SINGLE_NODE_SINGLE_WRITER" : "SINGLE_NODE_WRITER";
  }
  if (set.has("ReadWriteMany")) return "MULTI_NODE_MULTI_WRITER";
  if (set.has("ReadOnlyMany") && set.has("ReadWriteOnce")) {
    throw new CsikitError("CSIKIT_ERR_ACCESS_MODE", "ReadOnlyMany and ReadWriteOnce may not be combined");
  }
  if (set.has("ReadOnlyMany")) return "MULTI_NODE_READER_ONLY";
  return singleNodeMultiWriter ? "SINGLE_NODE_MULTI_WRITER" : "SINGLE_NODE_WRITER";
}

export interface CsiVolumeOptions {
  paths: KubeletPaths;
  nodeName: string;
  client: KubeClient;
  /** The node's resolved gates (feature-gates.ts). */
  featureGates: FeatureGates;
  /** Whether the host has SELinux (selinux.ts): without it no volume gets a context= option. */
  seLinuxEnabled: boolean;
}

/** fsGroup of a pod, if set. */
function podFsGroup(pod: Pod): number | undefined {
  const value = pod.spec?.securityContext?.fsGroup;
  return typeof value === "number" ? value : undefined;
}

export class CsiVolumePlugin {
  readonly #options: CsiVolumeOptions;

  constructor(options: CsiVolumeOptions) {
    this.#options = options;
  }

  /** Staging target of a volume (filesystem: .../<sha>/globalmount; block: volumeDevices/staging/<spec>). */
  stagingPath(spec: Pick<VolumeSpec, "driver" | "handle" | "block" | "specName">): string {
    const { paths } = this.#options;
    return spec.block
      ? paths.blockStagingTarget(spec.specName)
      : paths.stagingTarget(spec.driver, spec.handle);
  }

  targetPath(podUID: string, spec: Pick<VolumeSpec, "block" | "specName">): string {
    const { paths } = this.#options;
    return spec.block
      ? paths.blockPublishTarget(spec.specName, podUID)
      : paths.publishTarget(podUID, spec.specName);
  }

  capability(
    spec: VolumeSpec,
    driver: RegisteredDriver,
    volumeMountGroup: string | undefined,
    seLinuxLabel = "",
  ): VolumeCapabilityInput {
    const mode = csiAccessMode(
      spec.accessModes.length > 0 ? spec.accessModes : ["ReadWriteOnce"],
      driver.nodeCapabilities.has("SINGLE_NODE_MULTI_WRITER"),
    );
    if (spec.block) return { block: {}, accessMode: { mode } };
    return {
      mount: {
        fsType: spec.fsType,
        mountFlags: withSELinuxMountOption(spec.mountOptions, seLinuxLabel),
        ...(volumeMountGroup !== undefined ? { volumeMountGroup } : {}),
      },
      accessMode: { mode },
    };
  }

  /** volume_mount_group to pass: the fsGroup when the driver applies it itself. */
  mountGroup(
    pod: Pod | undefined,
    driver: RegisteredDriver,
    csiDriver: CSIDriver | undefined,
  ): string | undefined {
    const fsGroup = pod ? podFsGroup(pod) : undefined;
    if (fsGroup === undefined || !driver.nodeCapabilities.has("VOLUME_MOUNT_GROUP")) return undefined;
    const policy = csiDriver?.spec.fsGroupPolicy ?? "ReadWriteOnceWithFSType";
    return policy === "File" ? String(fsGroup) : undefined;
  }

  /** KEP-1710: the SELinux label this pod's volume is mounted with ("" = none; selinux.ts). */
  seLinuxLabel(volume: DesiredPodVolume, csiDriver: CSIDriver | undefined): string {
    if (volume.spec.block) return "";
    return seLinuxMountLabel(volume.pod, volume.outerName, volume.spec.accessModes, csiDriver, {
      gates: this.#options.featureGates,
      hostEnabled: this.#options.seLinuxEnabled,
    });
  }

  /** Writes the staging vol_data.json, creates the staging dir and calls NodeStageVolume if supported. */
  async stage(
    volume: DesiredPodVolume,
    driver: RegisteredDriver,
    csiDriver: CSIDriver | undefined,
    publishContext: Record<string, string>,
    signal: AbortSignal,
  ): Promise<StagedVolume> {
    const { paths } = this.#options;
    const { spec } = volume;
    const stagingPath = this.stagingPath(spec);
    const staged = driver.nodeCapabilities.has("STAGE_UNSTAGE_VOLUME");
    if (spec.block) {
      await writeJsonFile(join(paths.blockDataDir(spec.specName), VOL_DATA_FILE), this.#publishVolData(spec));
    } else {
      const data: StagingVolData = {
        volumeHandle: spec.handle,
        driverName: spec.driver,
        ...migratedVolData(spec.migratedFrom),
      };
      await writeJsonFile(join(paths.stagingDir(spec.driver, spec.handle), VOL_DATA_FILE), data);
    }
    // The kubelet creates the staging dir even for drivers without STAGE_UNSTAGE_VOLUME.
    await mkdir(stagingPath, { recursive: true, mode: 0o750 });
    if (staged) {
      await driver.client.node.nodeStageVolume(
        {
          volumeId: spec.handle,
          publishContext,
          stagingTargetPath: stagingPath,
          volumeCapability: this.capability(
            spec,
            driver,
            this.mountGroup(volume.pod, driver, csiDriver),
            this.seLinuxLabel(volume, csiDriver),
          ),
          secrets: await this.#secrets(spec.nodeStageSecretRef, "NodeStageSecretRef", signal),
          volumeContext: spec.volumeAttributes,
        },
        { signal },
      );
    }
    return {
      uniqueName: spec.uniqueName,
      driver: spec.driver,
      handle: spec.handle,
      specName: spec.specName,
      block: spec.block,
      stagingPath,
      staged,
      state: "mounted",
      ...(spec.migratedFrom !== undefined ? { migratedFrom: spec.migratedFrom } : {}),
    };
  }

  /** Writes the pod's vol_data.json, creates the parent dir and calls NodePublishVolume. */
  async publish(
    volume: DesiredPodVolume,
    driver: RegisteredDriver,
    csiDriver: CSIDriver | undefined,
    publishContext: Record<string, string>,
    signal: AbortSignal,
  ): Promise<PublishedVolume> {
    const { paths } = this.#options;
    const { spec, pod, podUID } = volume;
    const targetPath = this.targetPath(podUID, spec);
    const stagingPath = this.stagingPath(spec);
    if (spec.block) {
      await mkdir(paths.blockPublishDir(spec.specName), { recursive: true, mode: 0o750 });
    } else {
      await writeJsonFile(
        join(paths.podVolumeDir(podUID, spec.specName), VOL_DATA_FILE),
        this.#publishVolData(spec),
      );
    }
    const volumeContext: Record<string, string> = { ...spec.volumeAttributes };
    if (csiDriver?.spec.podInfoOnMount) {
      volumeContext[POD_INFO_KEYS.podName] = pod.metadata?.name ?? "";
      volumeContext[POD_INFO_KEYS.podNamespace] = pod.metadata?.namespace ?? "";
      volumeContext[POD_INFO_KEYS.podUID] = podUID;
      volumeContext[POD_INFO_KEYS.serviceAccountName] = pod.spec?.serviceAccountName ?? "default";
      volumeContext[POD_INFO_KEYS.ephemeral] = String(spec.ephemeral);
    }
    const secrets = await this.#secrets(spec.nodePublishSecretRef, "NodePublishSecretRef", signal);
    const tokens = await this.#serviceAccountTokens(pod, podUID, csiDriver, signal);
    if (tokens !== undefined) {
      // KEP-5538: a driver that opts in gets them in the csi_secret field, which every CSI log
      // sanitizer strips, instead of volume_context, which drivers log.
      const inSecrets =
        gateOn(this.#options.featureGates, NODE_GATES.csiServiceAccountTokenSecrets) &&
        csiDriver?.spec.serviceAccountTokenInSecrets === true;
      if (inSecrets) secrets[SERVICE_ACCOUNT_TOKENS_KEY] = tokens;
      else volumeContext[SERVICE_ACCOUNT_TOKENS_KEY] = tokens;
    }
    const mountGroup = this.mountGroup(pod, driver, csiDriver);
    await driver.client.node.nodePublishVolume(
      {
        volumeId: spec.handle,
        publishContext,
        ...(driver.nodeCapabilities.has("STAGE_UNSTAGE_VOLUME") && !spec.ephemeral
          ? { stagingTargetPath: stagingPath }
          : {}),
        targetPath,
        volumeCapability: this.capability(spec, driver, mountGroup, this.seLinuxLabel(volume, csiDriver)),
        readonly: spec.readOnly,
        secrets,
        volumeContext,
      },
      { signal },
    );
    if (spec.block) {
      const link = paths.podDeviceLink(podUID, spec.specName);
      await mkdir(dirname(link), { recursive: true, mode: 0o750 });
      await rm(link, { force: true });
      await symlink(targetPath, link);
    } else if (mountGroup === undefined && !spec.readOnly) {
      const fsGroup = podFsGroup(pod);
      if (fsGroup !== undefined && supportsFsGroup(spec, csiDriver)) await applyFsGroup(targetPath, fsGroup);
    }
    return {
      key: volume.key,
      podUID,
      specName: spec.specName,
      uniqueName: spec.uniqueName,
      driver: spec.driver,
      handle: spec.handle,
      block: spec.block,
      targetPath,
      stagingPath,
      state: "mounted",
      ...(spec.claim ? { claim: spec.claim } : {}),
      ...(spec.migratedFrom !== undefined ? { migratedFrom: spec.migratedFrom } : {}),
    };
  }

  /**
   * The kubelet's tokens for a driver with `tokenRequests`: one TokenRequest per audience for the
   * pod's ServiceAccount, bound to the pod, as JSON `{"<audience>": {token, expirationTimestamp}}`
   * (an empty audience asks for the API server's default audiences). Fresh on every publish, so a
   * driver with `requiresRepublish` receives tokens before the old ones expire.
   */
  async #serviceAccountTokens(
    pod: Pod,
    podUID: string,
    csiDriver: CSIDriver | undefined,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const requests = csiDriver?.spec.tokenRequests ?? [];
    if (requests.length === 0) return undefined;
    const namespace = pod.metadata?.namespace ?? "";
    const account = pod.spec?.serviceAccountName || "default";
    const tokens: Record<string, { token: string; expirationTimestamp: string }> = {};
    for (const request of requests) {
      const audience = request.audience ?? "";
      const response = await this.#options.client.request<{
        status?: { token?: string; expirationTimestamp?: string };
      }>(
        {
          method: "POST",
          path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(account)}/token`,
          body: {
            apiVersion: "authentication.k8s.io/v1",
            kind: "TokenRequest",
            spec: {
              audiences: audience === "" ? [] : [audience],
              ...(request.expirationSeconds !== undefined
                ? { expirationSeconds: request.expirationSeconds }
                : {}),
              boundObjectRef: { apiVersion: "v1", kind: "Pod", name: pod.metadata?.name ?? "", uid: podUID },
            },
          },
        },
        signal,
      );
      tokens[audience] = {
        token: response.status?.token ?? "",
        expirationTimestamp: response.status?.expirationTimestamp ?? "",
      };
    }
    return JSON.stringify(tokens);
  }

  /** NodeUnpublishVolume, then removes the pod's volume dir (or block link) and vol_data.json. */
  async unpublish(published: PublishedVolume, driver: RegisteredDriver, signal: AbortSignal): Promise<void> {
    const { paths } = this.#options;
    await driver.client.node.nodeUnpublishVolume(
      { volumeId: published.handle, targetPath: published.targetPath },
      { signal },
    );
    if (published.block) {
      await rm(paths.podDeviceLink(published.podUID, published.specName), { force: true });
      await rm(published.targetPath, { force: true, recursive: false }).catch(() => undefined);
      await removeEmptyDir(paths.blockPublishDir(published.specName));
    } else {
      const dir = paths.podVolumeDir(published.podUID, published.specName);
      await removeEmptyDir(published.targetPath);
      await unlink(join(dir, VOL_DATA_FILE)).catch(ignoreMissing);
      await removeEmptyDir(dir);
    }
  }

  /** NodeUnstageVolume when staged, then removes the staging dir and its vol_data.json. */
  async unstage(staged: StagedVolume, driver: RegisteredDriver, signal: AbortSignal): Promise<void> {
    const { paths } = this.#options;
    // The capability decides, not the record: a reconstructed entry cannot know whether stage ran.
    if (driver.nodeCapabilities.has("STAGE_UNSTAGE_VOLUME")) {
      await driver.client.node.nodeUnstageVolume(
        { volumeId: staged.handle, stagingTargetPath: staged.stagingPath },
        { signal },
      );
    }
    await removeEmptyDir(staged.stagingPath);
    if (staged.block) {
      const dataDir = paths.blockDataDir(staged.specName);
      await unlink(join(dataDir, VOL_DATA_FILE)).catch(ignoreMissing);
      await removeEmptyDir(dataDir);
      await removeEmptyDir(dirname(dataDir));
    } else {
      const dir = paths.stagingDir(staged.driver, staged.handle);
      await unlink(join(dir, VOL_DATA_FILE)).catch(ignoreMissing);
      await removeEmptyDir(dir);
    }
  }

  /** NodeExpandVolume of a published volume to `requiredBytes`. */
  async expand(
    published: PublishedVolume,
    spec: VolumeSpec,
    driver: RegisteredDriver,
    requiredBytes: number,
    signal: AbortSignal,
  ): Promise<void> {
    await driver.client.node.nodeExpandVolume(
      {
        volumeId: published.handle,
        volumePath: published.targetPath,
        capacityRange: { requiredBytes: String(requiredBytes) },
        ...(driver.nodeCapabilities.has("STAGE_UNSTAGE_VOLUME")
          ? { stagingTargetPath: published.stagingPath }
          : {}),
        volumeCapability: this.capability(spec, driver, undefined),
        secrets: await this.#secrets(spec.nodeExpandSecretRef, "NodeExpandSecretRef", signal),
      },
      { signal },
    );
  }

  #publishVolData(spec: VolumeSpec): PublishVolData {
    const { nodeName } = this.#options;
    return {
      specVolID: spec.specName,
      volumeHandle: spec.handle,
      driverName: spec.driver,
      nodeName,
      attachmentID: attachmentName(spec.handle, spec.driver, nodeName),
      volumeLifecycleMode: spec.ephemeral ? "Ephemeral" : "Persistent",
      ...migratedVolData(spec.migratedFrom),
    };
  }

  /** The secret's data as UTF-8 strings; the error names the reference, never a value. */
  async #secrets(
    ref: SecretReference | undefined,
    what: string,
    signal: AbortSignal,
  ): Promise<Record<string, string>> {
    if (!ref?.name) return {};
    const namespace = ref.namespace ?? "";
    let secret: Secret;
    try {
      secret = await this.#options.client.get<Secret>(GVR.secrets, ref.name, { namespace }, signal);
    } catch (error) {
      const reason = isNotFound(error) ? `secrets "${ref.name}" not found` : errorMessage(error);
      throw new CsikitError(
        "CSIKIT_ERR_SECRET",
        `fetching ${what} ${namespace}/${ref.name} failed: kubernetes.io/csi: failed to find the secret ${ref.name} in the namespace ${namespace} with error: ${reason}`,
      );
    }
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {}))
      out[key] = Buffer.from(value, "base64").toString("utf8");
    return out;
  }
}

/** The kubelet's supportsFSGroup: whether it applies fsGroup itself for this volume. */
export function supportsFsGroup(spec: VolumeSpec, csiDriver: CSIDriver | undefined): boolean {
  const policy = csiDriver?.spec.fsGroupPolicy ?? "ReadWriteOnceWithFSType";
  if (policy === "None") return false;
  if (policy === "File") return true;
  if (spec.fsType === "") return false;
  if (spec.ephemeral) return true;
  return spec.accessModes.includes("ReadWriteOnce") || spec.accessModes.includes("ReadWriteOncePod");
}

/** The kubelet's SetVolumeOwnership: group fsGroup, group rw (+x on dirs), setgid on dirs. */
export async function applyFsGroup(root: string, fsGroup: number): Promise<void> {
  const walk = async (path: string): Promise<void> => {
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) return;
    await chown(path, stats.uid, fsGroup);
    const mode = stats.mode & 0o7777;
    await chmod(path, stats.isDirectory() ? mode | 0o2070 : mode | 0o060);
    if (stats.isDirectory()) for (const entry of await readdir(path)) await walk(join(path, entry));
  };
  await walk(root);
}

function ignoreMissing(error: unknown): void {
  if (!isErrno(error, "ENOENT")) throw error;
}

/** Removes a dir if it exists and is empty; a non-empty dir (a mount left behind) stays. */
async function removeEmptyDir(path: string): Promise<void> {
  try {
    await rmdir(path);
  } catch (error) {
    if (isErrno(error, "ENOENT") || isErrno(error, "ENOTEMPTY") || isErrno(error, "EBUSY")) return;
    if (isErrno(error, "ENOTDIR")) {
      await unlink(path).catch(() => undefined);
      return;
    }
    throw error;
  }
}
