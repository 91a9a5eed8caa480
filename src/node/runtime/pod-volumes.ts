// The pod's non-CSI volumes, set up as the kubelet's volume plugins do under
// pods/<uid>/volumes/<escaped plugin>/<volume>: emptyDir (a dir, 0777; a tmpfs for medium
// Memory when root), configMap, secret, downwardAPI and projected (files in the atomic writer
// layout, secrets on a tmpfs when root), and hostPath (the host path, checked by its type).
// With the CSI volumes the reconciler published, they give every pod volume a host path the
// sandbox binds. While the pod runs, refreshPodVolumes writes the file volumes again from the
// current objects and pod (only what changed, swapped atomically), as the kubelet remounts
// them on each pod sync. Teardown unmounts the tmpfs ones and removes the dirs.

import { execFile } from "node:child_process";
import { lstat, mkdir, readdir, rm, stat, writeFile, chmod, chown } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Pod, Volume } from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import type { RuntimeContext } from "./context.ts";
import { writeAtomic, type PayloadFile } from "./atomic-writer.ts";
import { podFieldValue, resourceFieldValue, type ObjectSource } from "./env.ts";

const run = promisify(execFile);

/** The host side of one pod volume. */
export interface HostVolume {
  path: string;
  block: boolean;
  /** The volume itself is read-only (a PVC/CSI volume with readOnly, configMap, secret, …). */
  readOnly: boolean;
}

export interface VolumeSetupContext {
  paths: RuntimeContext["paths"];
  objects: ObjectSource & {
    /** A ServiceAccount token for the pod (TokenRequest bound to the pod). */
    token(serviceAccount: string, audience: string | undefined, expirationSeconds: number): Promise<string>;
  };
  hostIP: string;
  nowMs: number;
  /** Whether mounts are possible (root): tmpfs for secrets and Memory emptyDirs. */
  canMount: boolean;
}

const PLUGIN_DIRS = {
  emptyDir: "kubernetes.io~empty-dir",
  configMap: "kubernetes.io~configmap",
  secret: "kubernetes.io~secret",
  downwardAPI: "kubernetes.io~downward-api",
  projected: "kubernetes.io~projected",
} as const;

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}
function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}
function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
function mode(value: unknown, fallback: number): number {
  return typeof value === "number" ? value : fallback;
}

function volumeDir(
  paths: RuntimeContext["paths"],
  uid: string,
  kind: keyof typeof PLUGIN_DIRS,
  name: string,
): string {
  return join(paths.podDir(uid), "volumes", PLUGIN_DIRS[kind], name);
}

function fsGroupOf(pod: Pod): number | undefined {
  const value = record(pod.spec?.securityContext).fsGroup;
  return typeof value === "number" ? value : undefined;
}

/** A missing, non-optional ConfigMap or Secret volume source: the pod cannot start. */
export class VolumeSetupError extends Error {}

type Payload = Map<string, PayloadFile>;

/** key → file of a ConfigMap or Secret, filtered by items as the kubelet does. */
function itemsPayload(
  payload: Payload,
  data: Map<string, Buffer>,
  items: unknown[],
  defaultMode: number,
  what: string,
  optional: boolean,
): void {
  if (items.length === 0) {
    for (const [key, value] of data) payload.set(key, { data: value, mode: defaultMode });
    return;
  }
  for (const item of items.map(record)) {
    const value = data.get(text(item.key));
    if (value === undefined) {
      if (optional) continue;
      throw new VolumeSetupError(
        `configmap references non-existent config key: ${text(item.key)}`.replace("configmap", what),
      );
    }
    payload.set(text(item.path), { data: value, mode: mode(item.mode, defaultMode) });
  }
}

async function configMapPayload(
  payload: Payload,
  source: Record<string, unknown>,
  defaultMode: number,
  context: VolumeSetupContext,
): Promise<void> {
  const name = text(source.name);
  const cm = await context.objects.configMap(name);
  if (!cm) {
    if (source.optional === true) return;
    throw new VolumeSetupError(`configmap "${name}" not found`);
  }
  const data = new Map<string, Buffer>();
  for (const [key, value] of Object.entries(cm.data ?? {})) data.set(key, Buffer.from(value, "utf8"));
  for (const [key, value] of Object.entries(cm.binaryData ?? {})) data.set(key, Buffer.from(value, "base64"));
  itemsPayload(payload, data, list(source.items), defaultMode, "configmap", source.optional === true);
}

async function secretPayload(
  payload: Payload,
  source: Record<string, unknown>,
  nameField: "name" | "secretName",
  defaultMode: number,
  context: VolumeSetupContext,
): Promise<void> {
  const name = text(source[nameField]);
  const secret = await context.objects.secret(name);
  if (!secret) {
    if (source.optional === true) return;
    throw new VolumeSetupError(`secret "${name}" not found`);
  }
  const data = new Map<string, Buffer>();
  for (const [key, value] of Object.entries(secret.data ?? {})) data.set(key, Buffer.from(value, "base64"));
  itemsPayload(payload, data, list(source.items), defaultMode, "secret", source.optional === true);
}

function downwardPayload(
  payload: Payload,
  pod: Pod,
  items: unknown[],
  defaultMode: number,
  context: VolumeSetupContext,
): void {
  for (const item of items.map(record)) {
    let value: string;
    if (item.fieldRef !== undefined)
      value = podFieldValue(pod, text(record(item.fieldRef).fieldPath), context.hostIP);
    else if (item.resourceFieldRef !== undefined)
      value = resourceFieldValue(pod, pod.spec?.containers[0]?.name ?? "", record(item.resourceFieldRef));
    else continue;
    payload.set(text(item.path), { data: Buffer.from(value, "utf8"), mode: mode(item.mode, defaultMode) });
  }
}

async function projectedPayload(
  payload: Payload,
  pod: Pod,
  projected: Record<string, unknown>,
  context: VolumeSetupContext,
): Promise<void> {
  const defaultMode = mode(projected.defaultMode, 0o644);
  for (const source of list(projected.sources).map(record)) {
    if (source.configMap !== undefined)
      await configMapPayload(payload, record(source.configMap), defaultMode, context);
    else if (source.secret !== undefined)
      await secretPayload(payload, record(source.secret), "name", defaultMode, context);
    else if (source.downwardAPI !== undefined)
      downwardPayload(payload, pod, list(record(source.downwardAPI).items), defaultMode, context);
    else if (source.serviceAccountToken !== undefined) {
      const tokenSource = record(source.serviceAccountToken);
      const audience = text(tokenSource.audience);
      const token = await context.objects.token(
        pod.spec?.serviceAccountName ?? pod.spec?.serviceAccount ?? "default",
        audience === "" ? undefined : audience,
        typeof tokenSource.expirationSeconds === "number" ? tokenSource.expirationSeconds : 3600,
      );
      payload.set(text(tokenSource.path), {
        data: Buffer.from(token, "utf8"),
        mode: mode(tokenSource.mode, 0o600),
      });
    }
  }
}

async function isMountPoint(path: string): Promise<boolean> {
  const [self, parent] = await Promise.all([
    stat(path).catch(() => undefined),
    stat(join(path, "..")).catch(() => undefined),
  ]);
  return self !== undefined && parent !== undefined && self.dev !== parent.dev;
}

async function mountTmpfs(dir: string, sizeLimit?: string): Promise<void> {
  if (await isMountPoint(dir)) return;
  const options = [
    "-t",
    "tmpfs",
    "-o",
    sizeLimit ? `size=${sizeLimit.replace(/i$/, "")}` : "mode=0777",
    "tmpfs",
    dir,
  ];
  await run("mount", options);
}

async function hostPathVolume(volume: Volume): Promise<HostVolume> {
  const source = volume.hostPath!;
  const type = source.type ?? "";
  const info = await stat(source.path).catch(() => undefined);
  const fail = (what: string): never => {
    throw new VolumeSetupError(`hostPath type check failed: ${source.path} is not a ${what}`);
  };
  switch (type) {
    case "DirectoryOrCreate":
      if (!info) await mkdir(source.path, { recursive: true, mode: 0o755 });
      else if (!info.isDirectory()) fail("directory");
      break;
    case "Directory":
      if (!info?.isDirectory()) fail("directory");
      break;
    case "FileOrCreate":
      if (!info) await writeFile(source.path, "", { mode: 0o644 });
      else if (!info.isFile()) fail("file");
      break;
    case "File":
      if (!info?.isFile()) fail("file");
      break;
    case "Socket":
      if (!info?.isSocket()) fail("socket");
      break;
    case "CharDevice":
      if (!info?.isCharacterDevice()) fail("character device");
      break;
    case "BlockDevice":
      if (!info?.isBlockDevice()) fail("block device");
      break;
    default:
      break;
  }
  return { path: source.path, block: false, readOnly: false };
}

/**
 * Sets up pod's non-CSI volumes and returns the host path of every volume (CSI ones as given).
 * Idempotent: an emptyDir keeps its content; file volumes are written afresh.
 */
export async function setUpPodVolumes(
  pod: Pod,
  csiVolumes: ReadonlyMap<string, HostVolume>,
  context: VolumeSetupContext,
): Promise<Map<string, HostVolume>> {
  const uid = pod.metadata?.uid ?? "";
  const result = new Map<string, HostVolume>();
  const gid = fsGroupOf(pod);
  for (const volume of pod.spec?.volumes ?? []) {
    const csi = csiVolumes.get(volume.name);
    if (csi) {
      result.set(volume.name, csi);
      continue;
    }
    if (volume.hostPath) {
      result.set(volume.name, await hostPathVolume(volume));
      continue;
    }
    if (volume.emptyDir) {
      const dir = volumeDir(context.paths, uid, "emptyDir", volume.name);
      await mkdir(dir, { recursive: true });
      if (volume.emptyDir.medium === "Memory" && context.canMount)
        await mountTmpfs(dir, volume.emptyDir.sizeLimit);
      // The kubelet's SetVolumeOwnership for an fsGroup: the group owns the dir, setgid so new
      // files are the group's too.
      await chmod(dir, gid !== undefined ? 0o2777 : 0o777);
      if (gid !== undefined) await chown(dir, -1, gid).catch(() => undefined);
      result.set(volume.name, { path: dir, block: false, readOnly: false });
      continue;
    }
    const file = await fileVolumePayload(pod, volume, context);
    if (!file) continue; // a CSI volume not published (the reconciler waits for it) or one csikit has no plugin for
    const dir = volumeDir(context.paths, uid, file.kind, volume.name);
    await mkdir(dir, { recursive: true });
    // Secrets and tokens never touch the disk when a tmpfs is possible (the kubelet's secret plugin).
    if ((file.kind === "secret" || file.kind === "projected") && context.canMount) await mountTmpfs(dir);
    await writeAtomic(dir, file.payload, context.nowMs, gid);
    result.set(volume.name, { path: dir, block: false, readOnly: true });
  }
  return result;
}

type FileKind = "configMap" | "secret" | "downwardAPI" | "projected";

/** The files of a configMap, secret, downwardAPI or projected volume now; undefined for other kinds. */
async function fileVolumePayload(
  pod: Pod,
  volume: Volume,
  context: VolumeSetupContext,
): Promise<{ kind: FileKind; payload: Payload } | undefined> {
  const payload: Payload = new Map();
  let kind: FileKind;
  if (volume.configMap) {
    kind = "configMap";
    await configMapPayload(
      payload,
      record(volume.configMap),
      mode(volume.configMap.defaultMode, 0o644),
      context,
    );
  } else if (volume.secret) {
    kind = "secret";
    await secretPayload(
      payload,
      record(volume.secret),
      "secretName",
      mode(volume.secret.defaultMode, 0o644),
      context,
    );
  } else if (volume.downwardAPI !== undefined) {
    kind = "downwardAPI";
    const source = record(volume.downwardAPI);
    downwardPayload(payload, pod, list(source.items), mode(source.defaultMode, 0o644), context);
  } else if (volume.projected !== undefined) {
    kind = "projected";
    await projectedPayload(payload, pod, record(volume.projected), context);
  } else {
    return undefined;
  }
  // With an fsGroup the group may read every file (SetVolumeOwnership on a read-only volume).
  if (fsGroupOf(pod) !== undefined) for (const file of payload.values()) file.mode |= 0o440;
  return { kind, payload };
}

/**
 * The kubelet's remount of a running pod's configMap, secret, downwardAPI and projected
 * volumes (their plugins' RequiresRemount): each one's files built again from the current
 * objects and pod, and swapped in atomically where they changed. A volume whose source cannot
 * be read now (a non-optional object deleted) keeps its files. Resolves the names of the
 * volumes rewritten and the failures, by volume name (messages name objects, never data).
 */
export async function refreshPodVolumes(
  pod: Pod,
  context: VolumeSetupContext,
): Promise<{ updated: string[]; failed: Map<string, string> }> {
  const uid = pod.metadata?.uid ?? "";
  const updated: string[] = [];
  const failed = new Map<string, string>();
  for (const volume of pod.spec?.volumes ?? []) {
    try {
      const file = await fileVolumePayload(pod, volume, context);
      if (!file) continue;
      const dir = volumeDir(context.paths, uid, file.kind, volume.name);
      if ((await lstat(join(dir, "..data")).catch(() => undefined)) === undefined) continue; // not set up
      if (await writeAtomic(dir, file.payload, context.nowMs, fsGroupOf(pod))) updated.push(volume.name);
    } catch (error) {
      failed.set(volume.name, errorMessage(error));
    }
  }
  return { updated, failed };
}

/** Unmounts and removes every non-CSI volume dir of the pod. */
export async function tearDownPodVolumes(paths: RuntimeContext["paths"], uid: string): Promise<void> {
  for (const kind of Object.keys(PLUGIN_DIRS) as (keyof typeof PLUGIN_DIRS)[]) {
    const parent = join(paths.podDir(uid), "volumes", PLUGIN_DIRS[kind]);
    const names = await readdir(parent).catch(() => [] as string[]);
    for (const name of names) {
      const dir = join(parent, name);
      if (await isMountPoint(dir)) {
        try {
          await run("umount", [dir]);
        } catch (error) {
          throw new Error(`unmount ${dir}: ${errorMessage(error)}`);
        }
      }
      await rm(dir, { recursive: true, force: true });
    }
    if ((await lstat(parent).catch(() => undefined)) !== undefined)
      await rm(parent, { recursive: true, force: true });
  }
}

/**
 * Unmounts the pod's tmpfs volumes (secrets, projected, Memory emptyDirs) and leaves the dirs:
 * the node is stopping, its containers are gone, and a restarted node writes them again.
 */
export async function unmountPodTmpfs(paths: RuntimeContext["paths"], uid: string): Promise<void> {
  for (const kind of Object.keys(PLUGIN_DIRS) as (keyof typeof PLUGIN_DIRS)[]) {
    const parent = join(paths.podDir(uid), "volumes", PLUGIN_DIRS[kind]);
    for (const name of await readdir(parent).catch(() => [] as string[])) {
      const dir = join(parent, name);
      if (await isMountPoint(dir)) await run("umount", [dir]).catch(() => undefined);
    }
  }
}
