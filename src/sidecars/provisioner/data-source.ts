// Volume data sources: clone from a claim (same namespace — or another one with
// CrossNamespaceVolumeDataSource and a ReferenceGrant — same class and driver, volume mode and a
// request at least the source's size) and restore from a VolumeSnapshot (ready, bound content of
// this driver, restore size within the request, and --prevent-volume-mode-conversion: a
// volumeMode change needs the content's allow-volume-mode-change annotation). Other kinds are
// left to volume populators (`isPopulatorClaim`). Errors are ProvisionError with upstream's
// wording where it has one.

import {
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
    const snapshot = await context.view.snapshot(namespace, ref.name, context.signal);
    if (!snapshot) throw new ProvisionError(`error getting snapshot ${ref.name} from api server: not found`);
    if (snapshot.metadata?.deletionTimestamp)
      throw new ProvisionError(`snapshot ${namespace}/${ref.name} is being deleted`);
    if (snapshot.status?.readyToUse !== true) throw new ProvisionError(`snapshot ${ref.name} is not Ready`);
    const contentName = snapshot.status.boundVolumeSnapshotContentName ?? "";
    if (contentName === "") throw new ProvisionError(`snapshot ${ref.name} not bound`);
    const content = await context.view.snapshotContent(contentName, context.signal);
    if (!content)
      throw new ProvisionError(
        `error getting snapshotcontent ${contentName} for snapshot ${namespace}/${ref.name} from api server: not found`,
      );
    const bound = content.spec?.volumeSnapshotRef;
    if (
      bound?.name !== ref.name ||
      bound.namespace !== namespace ||
      (bound.uid !== undefined && bound.uid !== snapshot.metadata?.uid)
    )
      throw new ProvisionError(
        `snapshotcontent ${contentName} for snapshot ${namespace}/${ref.name} is bound to a different snapshot`,
      );
    if (content.spec?.driver !== context.driver.name)
      throw new ProvisionError(
        `snapshotcontent ${contentName} for snapshot ${namespace}/${ref.name} is of driver ${JSON.stringify(content.spec?.driver)}, not ${JSON.stringify(context.driver.name)}`,
      );
    const handle = content.status?.snapshotHandle ?? "";
    if (handle === "")
      throw new ProvisionError(
        `snapshot handle is not available: snapshotcontent ${contentName} has no status.snapshotHandle`,
      );
    if (
      context.options.preventVolumeModeConversion &&
      content.spec.sourceVolumeMode !== undefined &&
      content.spec.sourceVolumeMode !== claimMode &&
      content.metadata?.annotations?.[ALLOW_VOLUME_MODE_CHANGE] !== "true"
    )
      throw new ProvisionError(
        `requested volume ${namespace}/${claim.metadata?.name} modifies the mode of the source volume but does not have permission to do so. ${ALLOW_VOLUME_MODE_CHANGE} annotation is not present on snapshotcontent ${contentName}`,
      );
    const restore = content.status?.restoreSize;
    if (restore !== undefined && BigInt(restore) > requested)
      throw new ProvisionError(
        `requested volume size ${requested} is less than the size ${restore} for the source snapshot ${ref.name}`,
      );
    return {
      kind: "VolumeSnapshot",
      namespace,
      name: ref.name,
      contentSource: { snapshot: { snapshotId: handle } },
    };
  }
  throw new ProvisionError(`unsupported data source kind ${ref.kind}`);
}
