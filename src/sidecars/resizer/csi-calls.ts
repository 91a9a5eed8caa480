// The two driver calls the resizer makes, built from the PV as external-resizer builds them:
// - resize: ControllerExpandVolume with capacity_range.required_bytes = the new size, the
//   volume capability derived from the PV (access modes, fsType or block), secrets from
//   spec.csi.controllerExpandSecretRef; answers the new size and whether the node must expand.
//   A driver without controller EXPAND_VOLUME gets the "trivial resizer": no call, the size is
//   taken as is and the node must expand.
// - modify: ControllerModifyVolume with the class's parameters as mutable_parameters, secrets
//   from the PV's controller-modify-secret annotations, else controllerExpandSecretRef.
// Secret values never reach a log line, an event or an error.

import {
  GVR,
  formatQuantity,
  parseQuantity,
  quantityFromValue,
  quantityValue,
  type CSIPersistentVolumeSource,
  type PersistentVolume,
  type Secret,
  type SecretReference,
} from "../../api/index.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";
import type { VolumeCapabilityInput } from "../../csi/index.ts";
import { csiAccessMode, isNotFound, withMigratedCalls } from "../../kube/index.ts";
import { isPVMigratable, translateInTreePVToCSI } from "../../migration/index.ts";
import type { ResizerContext } from "./context.ts";
import { ANNOTATION } from "./names.ts";

export interface ResizeResult {
  /** The size the volume has now, as a quantity string (BinarySI, as resource.NewQuantity). */
  size: string;
  nodeExpansionRequired: boolean;
}

function csiSource(pv: PersistentVolume): CSIPersistentVolumeSource {
  const source = pv.spec?.csi;
  if (!source) throw new CsikitError("CSIKIT_ERR_VALIDATION", `PV ${pv.metadata?.name} is not a CSI volume`);
  if (!source.volumeHandle)
    throw new CsikitError("CSIKIT_ERR_VALIDATION", `PV ${pv.metadata?.name} has an empty volume handle`);
  return source;
}

/** GetVolumeCapabilities(pv.Spec): one capability from the PV's access modes and volume mode. */
export function volumeCapability(
  pv: PersistentVolume,
  singleNodeMultiWriter: boolean,
): VolumeCapabilityInput {
  const mode = csiAccessMode(pv.spec?.accessModes ?? [], singleNodeMultiWriter);
  if (pv.spec?.volumeMode === "Block") return { block: {}, accessMode: { mode } };
  return {
    mount: { fsType: pv.spec?.csi?.fsType ?? "", mountFlags: pv.spec?.mountOptions ?? [] },
    accessMode: { mode },
  };
}

/**
 * Expands the volume. An in-tree PV (CSI migration) is translated for the call only — the caller
 * keeps writing the in-tree PV — and the call is metered migrated="true".
 */
export async function resizeVolume(
  ctx: ResizerContext,
  inputPv: PersistentVolume,
  size: string,
  signal: AbortSignal,
): Promise<ResizeResult> {
  const migrated = !inputPv.spec?.csi && isPVMigratable(inputPv);
  const pv = migrated ? translateInTreePVToCSI(inputPv) : inputPv;
  return withMigratedCalls(migrated, () => expandCall(ctx, pv, size, signal));
}

async function expandCall(
  ctx: ResizerContext,
  pv: PersistentVolume,
  size: string,
  signal: AbortSignal,
): Promise<ResizeResult> {
  const source = csiSource(pv);
  const bytes = quantityValue(parseQuantity(size));
  if (!ctx.driver.controllerExpansion) return { size, nodeExpansionRequired: true };
  const secrets = await fetchSecrets(ctx, source.controllerExpandSecretRef, signal);
  const response = await ctx.csi.controller.controllerExpandVolume(
    {
      volumeId: source.volumeHandle,
      capacityRange: { requiredBytes: String(bytes) },
      secrets,
      volumeCapability: volumeCapability(pv, ctx.driver.singleNodeMultiWriter),
    },
    { timeoutMs: ctx.options.timeoutMs, signal },
  );
  return {
    size: formatQuantity(quantityFromValue(BigInt(response.capacityBytes), "BinarySI")),
    nodeExpansionRequired: response.nodeExpansionRequired,
  };
}

export async function modifyVolume(
  ctx: ResizerContext,
  pv: PersistentVolume,
  parameters: Record<string, string>,
  signal: AbortSignal,
): Promise<void> {
  const source = csiSource(pv);
  const annotations = pv.metadata?.annotations ?? {};
  const name = annotations[ANNOTATION.controllerModifySecretName];
  const namespace = annotations[ANNOTATION.controllerModifySecretNamespace];
  const ref: SecretReference | undefined =
    name && namespace ? { name, namespace } : source.controllerExpandSecretRef;
  const secrets = await fetchSecrets(ctx, ref, signal);
  await ctx.csi.controller.controllerModifyVolume(
    { volumeId: source.volumeHandle, secrets, mutableParameters: parameters },
    { timeoutMs: ctx.options.timeoutMs, signal },
  );
}

/** All keys of the secret as UTF-8 strings; the error names the reference, never a value. */
async function fetchSecrets(
  ctx: ResizerContext,
  ref: SecretReference | undefined,
  signal: AbortSignal,
): Promise<Record<string, string>> {
  if (!ref?.name) return {};
  const namespace = ref.namespace ?? "";
  let secret: Secret;
  try {
    secret = await ctx.client.get<Secret>(GVR.secrets, ref.name, { namespace }, signal);
  } catch (error) {
    const reason = isNotFound(error) ? `secrets "${ref.name}" not found` : errorMessage(error);
    throw new CsikitError(
      "CSIKIT_ERR_SECRET",
      `error getting secret ${ref.name} in namespace ${namespace}: ${reason}`,
    );
  }
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    out[key] = Buffer.from(value, "base64").toString("utf8");
  return out;
}
