// Builds the CreateVolume request for a claim, and the secret references the PV will carry,
// from the claim, its StorageClass and what the cluster view reads — everything upstream's
// provisioner.prepareProvision does: name, capacity range, capabilities (access mode mapping,
// block vs mount with fsType and mountOptions), parameters minus reserved keys plus
// --extra-create-metadata, provisioner secrets (templates resolved, secret read), topology,
// content source (data-source.ts) and VolumeAttributesClass mutable parameters.
// Errors are ProvisionError with a message for the ProvisioningFailed event; secret values
// never appear in any message.

import {
  parseQuantity,
  quantityValue,
  type PersistentVolumeClaim,
  type StorageClass,
} from "../../api/index.ts";
import type { CreateVolumeRequestInput, VolumeCapabilityInput } from "../../csi/index.ts";
import { AccessModeError, csiAccessMode, secretStrings } from "../../kube/index.ts";
import { resolveDataSource, type ResolvedDataSource } from "./data-source.ts";
import type { DriverInfo } from "./driver.ts";
import { ProvisionError } from "./errors.ts";
import {
  classFsType,
  driverParameters,
  secretReference,
  type SecretKind,
  type SecretRef,
} from "./parameters.ts";
import { SelectedNodeMissingError, accessibilityRequirements } from "./topology.ts";
import type { ClusterView } from "./view.ts";
import { volumeName } from "./names.ts";
import type { ProvisionerOptions } from "./options.ts";

export const SELECTED_NODE = "volume.kubernetes.io/selected-node";

export type RequestOptions = Pick<
  ProvisionerOptions,
  | "volumeNamePrefix"
  | "volumeNameUuidLength"
  | "extraCreateMetadata"
  | "strictTopology"
  | "immediateTopology"
  | "defaultFsType"
  | "preventVolumeModeConversion"
  | "features"
>;

export interface PreparedProvision {
  pvName: string;
  request: CreateVolumeRequestInput;
  requestedBytes: bigint;
  fsType: string;
  block: boolean;
  provisionerSecret: SecretRef | undefined;
  /** Secret refs for the PV's spec.csi. */
  secretRefs: Partial<Record<SecretKind, SecretRef>>;
  dataSource: ResolvedDataSource | undefined;
}

function bytes(text: string | undefined, what: string): bigint | undefined {
  if (text === undefined) return undefined;
  try {
    return quantityValue(parseQuantity(text));
  } catch {
    throw new ProvisionError(`invalid ${what} ${JSON.stringify(text)}`);
  }
}

export async function readSecret(
  view: ClusterView,
  ref: SecretRef | undefined,
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  if (!ref) return {};
  const secret = await view.secret(ref.namespace, ref.name, signal);
  if (!secret) throw new ProvisionError(`failed to get secret ${ref.namespace}/${ref.name}: not found`);
  return secretStrings(secret);
}

export async function prepareProvision(
  context: { view: ClusterView; driver: DriverInfo; options: RequestOptions; signal?: AbortSignal },
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
): Promise<PreparedProvision> {
  const { view, driver, options } = context;
  const uid = claim.metadata?.uid ?? "";
  const pvName = volumeName(options.volumeNamePrefix, uid, options.volumeNameUuidLength);
  const spec = claim.spec ?? {};
  const requested = bytes(spec.resources?.requests?.storage, "storage request");
  if (requested === undefined)
    throw new ProvisionError("claim has no storage request (spec.resources.requests.storage)");
  const limit = bytes(spec.resources?.limits?.storage, "storage limit");
  const block = spec.volumeMode === "Block";
  const parameters = storageClass.parameters ?? {};
  let fsType: string;
  let driverParams: Record<string, string>;
  try {
    fsType = classFsType(parameters, options.defaultFsType);
    driverParams = driverParameters(parameters);
  } catch (error) {
    throw new ProvisionError((error as Error).message);
  }
  let mode;
  try {
    mode = csiAccessMode(spec.accessModes ?? [], driver.singleNodeMultiWriter);
  } catch (error) {
    if (error instanceof AccessModeError) throw new ProvisionError(error.message);
    throw error;
  }
  const capability: VolumeCapabilityInput = block
    ? { block: {}, accessMode: { mode } }
    : {
        mount: { fsType: fsType, mountFlags: storageClass.mountOptions ?? [] },
        accessMode: { mode },
      };
  if (options.extraCreateMetadata) {
    driverParams["csi.storage.k8s.io/pvc/name"] = claim.metadata?.name ?? "";
    driverParams["csi.storage.k8s.io/pvc/namespace"] = claim.metadata?.namespace ?? "";
    driverParams["csi.storage.k8s.io/pv/name"] = pvName;
  }
  const secretRefs: Partial<Record<SecretKind, SecretRef>> = {};
  let provisionerSecret: SecretRef | undefined;
  try {
    provisionerSecret = secretReference("provisioner", parameters, pvName, claim);
    for (const kind of [
      "controllerPublish",
      "nodeStage",
      "nodePublish",
      "controllerExpand",
      "nodeExpand",
      "controllerModify",
    ] as const) {
      const ref = secretReference(kind, parameters, pvName, claim);
      if (ref) secretRefs[kind] = ref;
    }
  } catch (error) {
    throw new ProvisionError((error as Error).message);
  }
  const secrets = await readSecret(view, provisionerSecret, context.signal);
  const request: CreateVolumeRequestInput = {
    name: pvName,
    capacityRange: {
      requiredBytes: requested.toString(),
      ...(limit !== undefined ? { limitBytes: limit.toString() } : {}),
    },
    volumeCapabilities: [capability],
    parameters: driverParams,
    secrets,
  };
  const dataSource = await resolveDataSource(
    { view, driver, options, ...(context.signal ? { signal: context.signal } : {}) },
    claim,
    storageClass,
    requested,
  );
  if (dataSource) request.volumeContentSource = dataSource.contentSource;
  if (driver.topology) {
    const selectedNode = claim.metadata?.annotations?.[SELECTED_NODE] ?? "";
    try {
      const requirement = accessibilityRequirements({
        driverName: driver.name,
        claimName: claim.metadata?.name ?? "",
        selectedNode,
        allowedTopologies: storageClass.allowedTopologies ?? [],
        strictTopology: options.strictTopology,
        immediateTopology: options.immediateTopology,
        csiNodes: view.csiNodes(),
        nodes: view.nodes(),
      });
      if (requirement) request.accessibilityRequirements = requirement;
    } catch (error) {
      throw new ProvisionError((error as Error).message, {
        reschedule: error instanceof SelectedNodeMissingError,
      });
    }
  }
  if (options.features.volumeAttributesClass && spec.volumeAttributesClassName) {
    const vac = await view.volumeAttributesClass(spec.volumeAttributesClassName, context.signal);
    if (!vac)
      throw new ProvisionError(
        `VolumeAttributesClass ${JSON.stringify(spec.volumeAttributesClassName)} not found`,
      );
    if (vac.driverName !== driver.name)
      throw new ProvisionError(
        `VolumeAttributesClass ${JSON.stringify(spec.volumeAttributesClassName)} is for driver ${JSON.stringify(vac.driverName)}, not ${JSON.stringify(driver.name)}`,
      );
    request.mutableParameters = { ...(vac.parameters ?? {}) };
  }
  return {
    pvName,
    request,
    requestedBytes: requested,
    fsType,
    block,
    provisionerSecret,
    secretRefs,
    dataSource,
  };
}
