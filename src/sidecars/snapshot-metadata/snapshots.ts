// From the names a backup application knows to what the driver knows: a VolumeSnapshot (ready,
// bound) → its VolumeSnapshotContent (ready, with status.snapshotHandle) → the CSI snapshot id,
// the driver that owns it, and the snapshotter secret its VolumeSnapshotClass (named, or the
// driver's default class) names through csi.storage.k8s.io/snapshotter-secret-name/-namespace
// and their templates, as external-snapshot-metadata resolves them. Every failure is upstream's
// status: NOT_FOUND for a missing object, UNAVAILABLE for one not (yet) usable or an API error,
// INVALID_ARGUMENT for another driver's snapshot. Secret values go only into the CSI request.

import {
  ANNOTATIONS,
  GVR,
  type Secret,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import { CsiError, GrpcStatus } from "../../csi/index.ts";
import { isNotFound, secretStrings, type KubeClient, type KubeObject } from "../../kube/index.ts";

const SECRET_NAME = "csi.storage.k8s.io/snapshotter-secret-name";
const SECRET_NAMESPACE = "csi.storage.k8s.io/snapshotter-secret-namespace";

/** What a VolumeSnapshot resolves to. */
export interface ResolvedSnapshot {
  snapshot: VolumeSnapshot & KubeObject;
  contentName: string;
  driverName: string;
  snapshotHandle: string;
}

const unavailable = (message: string): CsiError => new CsiError(GrpcStatus.UNAVAILABLE, message);

async function readySnapshot(
  client: KubeClient,
  namespace: string,
  name: string,
  signal: AbortSignal,
): Promise<VolumeSnapshot & KubeObject> {
  let snapshot: VolumeSnapshot & KubeObject;
  try {
    snapshot = await client.get(GVR.volumeSnapshots, name, { namespace }, signal);
  } catch (error) {
    if (isNotFound(error))
      throw new CsiError(GrpcStatus.NOT_FOUND, `VolumeSnapshot ${namespace}/${name} not found`);
    throw unavailable(`failed to get VolumeSnapshot ${namespace}/${name}: ${errorMessage(error)}`);
  }
  if (snapshot.status?.readyToUse !== true)
    throw unavailable(`the VolumeSnapshot is not yet ready, name: ${name}`);
  if (!snapshot.status.boundVolumeSnapshotContentName)
    throw unavailable(`boundVolumeSnapshotContentName is not set in VolumeSnapshot status, name: ${name}`);
  return snapshot;
}

async function readyContent(
  client: KubeClient,
  name: string,
  signal: AbortSignal,
): Promise<VolumeSnapshotContent & KubeObject> {
  let content: VolumeSnapshotContent & KubeObject;
  try {
    content = await client.get(GVR.volumeSnapshotContents, name, {}, signal);
  } catch (error) {
    if (isNotFound(error))
      throw new CsiError(GrpcStatus.NOT_FOUND, `VolumeSnapshotContent ${name} not found`);
    throw unavailable(`failed to get VolumeSnapshotContent ${name}: ${errorMessage(error)}`);
  }
  if (content.status?.readyToUse !== true)
    throw unavailable(`the VolumeSnapshotContent is not yet ready, name: ${name}`);
  if (!content.status.snapshotHandle)
    throw unavailable(`snapshotHandle is not set in VolumeSnapshotContent status, name: ${name}`);
  return content;
}

/** The CSI snapshot id of VolumeSnapshot namespace/name, checked to belong to `driverName`. */
export async function resolveSnapshot(
  client: KubeClient,
  request: { namespace: string; name: string; driverName: string },
  signal: AbortSignal,
): Promise<ResolvedSnapshot> {
  const snapshot = await readySnapshot(client, request.namespace, request.name, signal);
  const contentName = snapshot.status!.boundVolumeSnapshotContentName!;
  const content = await readyContent(client, contentName, signal);
  if (content.spec.driver !== request.driverName)
    throw new CsiError(
      GrpcStatus.INVALID_ARGUMENT,
      `VolumeSnapshot ${request.name} does not belong to the CSI driver ${request.driverName}`,
    );
  return {
    snapshot,
    contentName,
    driverName: content.spec.driver,
    snapshotHandle: content.status!.snapshotHandle!,
  };
}

/** The class that governs a snapshot: the one it names, or its driver's only default. */
async function classOf(
  client: KubeClient,
  resolved: ResolvedSnapshot,
  signal: AbortSignal,
): Promise<VolumeSnapshotClass & KubeObject> {
  const named = resolved.snapshot.spec.volumeSnapshotClassName;
  if (named) {
    try {
      return await client.get(GVR.volumeSnapshotClasses, named, {}, signal);
    } catch (error) {
      throw unavailable(`failed to get VolumeSnapshotClass ${named}: ${errorMessage(error)}`);
    }
  }
  let classes: (VolumeSnapshotClass & KubeObject)[];
  try {
    classes = (await client.list<VolumeSnapshotClass & KubeObject>(GVR.volumeSnapshotClasses, {}, signal))
      .items;
  } catch (error) {
    throw unavailable(`failed to list VolumeSnapshotClasses: ${errorMessage(error)}`);
  }
  const defaults = classes.filter(
    (c) =>
      c.driver === resolved.driverName &&
      c.metadata?.annotations?.[ANNOTATIONS.isDefaultSnapshotClass.key] === "true",
  );
  if (defaults.length > 1)
    throw unavailable(`multiple default VolumeSnapshotClasses for the CSI driver ${resolved.driverName}`);
  if (defaults.length === 0)
    throw unavailable(`no default VolumeSnapshotClass for the CSI driver ${resolved.driverName}`);
  return defaults[0]!;
}

/** A snapshotter secret parameter with its templates filled in; refuses unknown ones. */
export function expandSecretTemplate(
  template: string,
  values: Readonly<Record<string, string>>,
  field: string,
): string {
  return template.replace(/\$\{([^}]*)\}/g, (whole, key: string) => {
    const value = values[key];
    if (value === undefined)
      throw unavailable(
        `invalid secret in VolumeSnapshotClass: ${field} ${JSON.stringify(template)} has an unknown template ${whole}`,
      );
    return value;
  });
}

/**
 * The snapshotter secret of a snapshot's class as CSI wants it, or undefined when the class
 * names none. As upstream's GetSecretReference: both parameters or neither; the name may use
 * ${volumesnapshotcontent.name}, ${volumesnapshot.namespace} and ${volumesnapshot.name}, the
 * namespace ${volumesnapshotcontent.name} and ${volumesnapshot.namespace}.
 */
export async function snapshotterSecrets(
  client: KubeClient,
  resolved: ResolvedSnapshot,
  signal: AbortSignal,
): Promise<Record<string, string> | undefined> {
  const snapshotClass = await classOf(client, resolved, signal);
  const params = snapshotClass.parameters ?? {};
  const nameTemplate = params[SECRET_NAME];
  const namespaceTemplate = params[SECRET_NAMESPACE];
  if (nameTemplate === undefined && namespaceTemplate === undefined) return undefined;
  if (nameTemplate === undefined || namespaceTemplate === undefined)
    throw unavailable(
      `invalid secret in VolumeSnapshotClass ${snapshotClass.metadata?.name}: ${SECRET_NAME} and ${SECRET_NAMESPACE} must be given together`,
    );
  const common = {
    "volumesnapshotcontent.name": resolved.contentName,
    "volumesnapshot.namespace": resolved.snapshot.metadata?.namespace ?? "",
  };
  const namespace = expandSecretTemplate(namespaceTemplate, common, SECRET_NAMESPACE);
  const name = expandSecretTemplate(
    nameTemplate,
    { ...common, "volumesnapshot.name": resolved.snapshot.metadata?.name ?? "" },
    SECRET_NAME,
  );
  try {
    const secret = await client.get<Secret & KubeObject>(GVR.secrets, name, { namespace }, signal);
    return secretStrings(secret);
  } catch (error) {
    // The reference is no secret; its data never reaches this message.
    throw unavailable(
      `failed to get the snapshotter credentials ${namespace}/${name}: ${errorMessage(error)}`,
    );
  }
}
