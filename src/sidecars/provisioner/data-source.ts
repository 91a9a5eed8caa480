// Volume data sources: clone from a claim (same namespace — or another one with
// CrossNamespaceVolumeDataSource and a ReferenceGrant — same class and driver, volume mode and a
// request at least the source's size) and restore from a VolumeSnapshot (also cross-namespace
// under the same gate and grant; a group snapshot's member alike): ready, bound content of this
// driver, restore size within the request, and --prevent-volume-mode-conversion: a volumeMode
// change needs the content's allow-volume-mode-change annotation, read as Go's ParseBool. Other kinds are
// left to volume populators (`isPopulatorClaim`). Errors are ProvisionError with upstream's
// wording where it has one.

import {
  FINALIZERS,
  parseQuantity,
  quantityValue,
  type PersistentVolumeClaim,
  type StorageClass,
  type TypedObjectReference,
} from "../../api/index.ts";
import type { VolumeContentSourceInput } from "../../csi/index.ts";
import type { DriverInfo } from "./driver.ts";
import { ProvisionError } from "./errors.ts";
import type { ClusterView } from "./view.ts";

export const SNAPSHOT_GROUP = "snapshot.storage.k8s.io";
export const ALLOW_VOLUME_MODE_CHANGE = "snapshot.storage.kubernetes.io/allow-volume-mode-change";

export interface ResolvedDataSource {
  kind: "PersistentVolumeClaim" | "VolumeSnapshot";
  namespace: string;
  name: string;
  contentSource: VolumeContentSourceInput;
}

/** The claim's data source: dataSourceRef wins over dataSource (they mirror each other). */
export function claimDataSource(claim: PersistentVolumeClaim): TypedObjectReference | undefined {
  return claim.spec?.dataSourceRef ?? claim.spec?.dataSource;
}

function isClaimSource(ref: TypedObjectReference): boolean {
  return ref.kind === "PersistentVolumeClaim" && (ref.apiGroup ?? "") === "";
}
function isSnapshotSource(ref: TypedObjectReference): boolean {
  return ref.kind === "VolumeSnapshot" && ref.apiGroup === SNAPSHOT_GROUP;
}

/** A data source this provisioner does not handle: a volume populator's job. */
export function isPopulatorClaim(claim: PersistentVolumeClaim): boolean {
  const ref = claimDataSource(claim);
  return ref !== undefined && !isClaimSource(ref) && !isSnapshotSource(ref);
}

/** The source claim key (`ns/name`) of a clone, for cloning protection. */
export function cloneSourceKey(claim: PersistentVolumeClaim): string | undefined {
  const ref = claimDataSource(claim);
  if (!ref || !isClaimSource(ref)) return undefined;
  return `${ref.namespace ?? claim.metadata?.namespace ?? ""}/${ref.name}`;
}

function sizeOf(text: string | undefined): bigint | undefined {
  if (text === undefined) return undefined;
  try {
    return quantityValue(parseQuantity(text));
  } catch {
    return undefined;
  }
}

async function checkCrossNamespace(
  context: {
    view: ClusterView;
    options: { features: { crossNamespaceVolumeDataSource: boolean } };
    signal?: AbortSignal;
  },
  claim: PersistentVolumeClaim,
  ref: TypedObjectReference,
): Promise<void> {
  if (!context.options.features.crossNamespaceVolumeDataSource)
    throw new ProvisionError(
      "dataSourceRef.namespace is set but the CrossNamespaceVolumeDataSource feature gate is not enabled",
    );
  const grants = await context.view.referenceGrants(ref.namespace!, context.signal);
  const fromNamespace = claim.metadata?.namespace ?? "";
  const group = ref.apiGroup ?? "";
  const allowed = grants.some(
    (grant) =>
      (grant.spec?.from ?? []).some(
        (f) => f.group === "" && f.kind === "PersistentVolumeClaim" && f.namespace === fromNamespace,
      ) &&
      (grant.spec?.to ?? []).some(
        (t) =>
          t.group === group &&
          t.kind === ref.kind &&
          (t.name === undefined || t.name === "" || t.name === ref.name),
      ),
  );
  if (!allowed)
    throw new ProvisionError(
      `accessing ${ref.namespace}/${ref.name} of ${ref.kind} dataSource from ${fromNamespace}/${claim.metadata?.name} isn't allowed`,
    );
}

export async function resolveDataSource(
  context: {
    view: ClusterView;
    driver: DriverInfo;
    options: { preventVolumeModeConversion: boolean; features: { crossNamespaceVolumeDataSource: boolean } };
    signal?: AbortSignal;
  },
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  requested: bigint,
): Promise<ResolvedDataSource | undefined> {
  const ref = claimDataSource(claim);
  if (!ref) return undefined;
  const claimNamespace = claim.metadata?.namespace ?? "";
  const namespace = ref.namespace && ref.namespace !== "" ? ref.namespace : claimNamespace;
  if (namespace !== claimNamespace) await checkCrossNamespace(context, claim, { ...ref, namespace });
  const claimMode = claim.spec?.volumeMode ?? "Filesystem";
  if (isClaimSource(ref)) {
    if (!context.driver.cloneVolume) throw new ProvisionError("CLONE_VOLUME is not supported by the driver");
    const source = context.view.claim(namespace, ref.name);
    if (!source)
      throw new ProvisionError(
        `error getting PVC ${namespace}/${ref.name} (specified as data source): not found`,
      );
    if (source.metadata?.deletionTimestamp)
      throw new ProvisionError(
        `the PVC ${namespace}/${ref.name} (specified as data source) is being deleted`,
      );
    if ((source.spec?.storageClassName ?? "") !== (claim.spec?.storageClassName ?? ""))
      throw new ProvisionError(
        "the source PVC and destination PVCs must be in the same storage class for cloning",
      );
    const volumeName = source.spec?.volumeName ?? "";
    if (volumeName === "" || source.status?.phase !== "Bound")
      throw new ProvisionError(`the PVC ${namespace}/${ref.name} (specified as data source) is not bound`);
    const sourceMode = source.spec?.volumeMode ?? "Filesystem";
    if (sourceMode !== claimMode)
      throw new ProvisionError(
        `the source PVC and destination PVCs must have the same volume mode for cloning. Source is ${sourceMode}. Requested PVC is ${claimMode}`,
      );
    const sourceSize = sizeOf(source.spec?.resources?.requests?.storage);
    if (sourceSize !== undefined && requested < sourceSize)
      throw new ProvisionError(
        "error, new PVC request must be greater than or equal in size to the specified PVC data source",
      );
    const pv = context.view.volume(volumeName);
    if (!pv) throw new ProvisionError(`error getting PV ${volumeName} bound to the data source PVC`);
    if (pv.spec?.csi?.driver !== context.driver.name)
      throw new ProvisionError(
        `the source PVC and destination PVCs must use the same CSI driver ${JSON.stringify(context.driver.name)}`,
      );
    if (pv.spec.claimRef?.uid !== source.metadata?.uid)
      throw new ProvisionError(`the source PV ${volumeName} is not bound to the data source PVC`);
    return {
      kind: "PersistentVolumeClaim",
      namespace,
      name: ref.name,
      contentSource: { volume: { volumeId: pv.spec.csi.volumeHandle } },
    };
  }
  if (isSnapshotSource(ref)) {
    if (!context.driver.snapshots)
      throw new ProvisionError("CREATE_DELETE_SNAPSHOT is not supported by the driver");
    return resolveSnapshotSource(context, claim, namespace, ref.name, claimMode, requested);
  }
  throw new ProvisionError(`unsupported data source kind ${ref.kind}`);
}

/** Go's strconv.ParseBool: the annotation's accepted spellings, undefined for anything else. */
function parseGoBool(text: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(text)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(text)) return false;
  return undefined;
}

/**
 * A VolumeSnapshot source, checked in upstream's order with its messages (getSnapshotSource):
 * a snapshot being deleted is still restored from while it carries this provisioner's
 * source-protection finalizer (the restore began before the deletion: stopping would leak the
 * volume, external-provisioner v6.2); every binding fault reads "snapshot <name> not bound"; the
 * restore size is the VolumeSnapshot's. A member of a group snapshot
 * (status.volumeGroupSnapshotName) is an ordinary VolumeSnapshot here, as upstream.
 */
async function resolveSnapshotSource(
  context: {
    view: ClusterView;
    driver: DriverInfo;
    options: { preventVolumeModeConversion: boolean };
    signal?: AbortSignal;
  },
  claim: PersistentVolumeClaim,
  namespace: string,
  name: string,
  claimMode: string,
  requested: bigint,
): Promise<ResolvedDataSource> {
  const snapshot = await context.view.snapshot(namespace, name, context.signal);
  if (!snapshot)
    throw new ProvisionError(
      `error getting snapshot ${name} from api server: volumesnapshots.snapshot.storage.k8s.io "${name}" not found`,
    );
  if (
    snapshot.metadata?.deletionTimestamp &&
    !(snapshot.metadata.finalizers ?? []).includes(FINALIZERS.snapshotAsSourceProtectionProvisioner.key)
  )
    throw new ProvisionError(`snapshot ${name} is being deleted`);
  const notBound = new ProvisionError(`snapshot ${name} not bound`);
  const contentName = snapshot.status?.boundVolumeSnapshotContentName;
  if (contentName === undefined) throw notBound;
  const content = await context.view.snapshotContent(contentName, context.signal);
  const bound = content?.spec?.volumeSnapshotRef;
  if (
    !content ||
    bound?.uid !== snapshot.metadata?.uid ||
    bound?.namespace !== snapshot.metadata?.namespace ||
    bound?.name !== snapshot.metadata?.name
  )
    throw notBound;
  if (content.spec?.driver !== context.driver.name) throw notBound;
  if (snapshot.status?.readyToUse !== true) throw new ProvisionError(`snapshot ${name} is not Ready`);
  const handle = content.status?.snapshotHandle;
  if (handle === undefined) throw new ProvisionError(`snapshot handle ${name} is not available`);
  const restoreText = snapshot.status.restoreSize;
  if (restoreText !== undefined) {
    const restore = sizeOf(String(restoreText));
    if (claim.spec?.resources?.requests?.storage === undefined)
      throw new ProvisionError(
        `error getting capacity for PVC ${claim.metadata?.name} when creating snapshot ${name}`,
      );
    if (restore !== undefined && requested < restore)
      throw new ProvisionError(
        `requested volume size ${requested} is less than the size ${restore} for the source snapshot ${name}`,
      );
  }
  const sourceMode = content.spec?.sourceVolumeMode;
  if (context.options.preventVolumeModeConversion && sourceMode !== undefined && sourceMode !== claimMode) {
    const prefix = `requested volume ${claim.metadata?.namespace}/${claim.metadata?.name} modifies the mode of the source volume but does not have permission to do so. `;
    const annotation = content.metadata?.annotations?.[ALLOW_VOLUME_MODE_CHANGE];
    if (annotation === undefined)
      throw new ProvisionError(
        `${prefix}${ALLOW_VOLUME_MODE_CHANGE} annotation is not present on snapshotcontent ${contentName}`,
      );
    const allowed = parseGoBool(annotation);
    if (allowed === undefined)
      throw new ProvisionError(
        `${prefix}failed to convert ${ALLOW_VOLUME_MODE_CHANGE} annotation value to boolean with error: strconv.ParseBool: parsing ${JSON.stringify(annotation)}: invalid syntax`,
      );
    if (!allowed)
      throw new ProvisionError(
        `${prefix}${ALLOW_VOLUME_MODE_CHANGE} is set to false on snapshotcontent ${contentName}`,
      );
  }
  return { kind: "VolumeSnapshot", namespace, name, contentSource: { snapshot: { snapshotId: handle } } };
}
