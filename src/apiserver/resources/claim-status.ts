// PersistentVolumeClaim status fields written by the resizer and the modify controller, checked
// as kube-apiserver checks a claim's /status once RecoverVolumeExpansionFailure and
// VolumeAttributesClass are GA (1.34): allocatedResources and allocatedResourceStatuses (keys
// are resource names, of which only storage is standard; the statuses the resize protocol
// defines), currentVolumeAttributesClassName and modifyVolumeStatus (a class name, a known
// status).

import {
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  isQualifiedName,
  tryParseQuantity,
} from "../../api/index.ts";
import type { FieldCause } from "../rest/resource.ts";
import { at, isRecord, str } from "./common.ts";
import type { Obj } from "./common.ts";
import { isDNS1123Subdomain } from "../../api/index.ts";

/** ClaimResourceStatus values of the resize protocol (KEP-1790). */
export const CLAIM_RESOURCE_STATUSES = [
  "ControllerResizeInProgress",
  "ControllerResizeInfeasible",
  "NodeResizePending",
  "NodeResizeInProgress",
  "NodeResizeInfeasible",
] as const;

/** PersistentVolumeClaimModifyVolumeStatus values (KEP-3751). */
export const MODIFY_VOLUME_STATUSES = ["Pending", "InProgress", "Infeasible"] as const;

/**
 * A key of allocatedResources / allocatedResourceStatuses: a qualified name; one without a
 * domain (a standard resource name) must be storage, the only one a claim can resize.
 */
function resourceKeyCauses(key: string, field: string): FieldCause[] {
  const causes = isQualifiedName(key).map((message) => fieldInvalid(field, key, message));
  if (causes.length === 0 && !key.includes("/") && key !== "storage")
    causes.push(fieldNotSupported(field, key, ["storage"]));
  return causes;
}

/** A class name when one is given (empty: none, as a claim without a class reads). */
function classNameCauses(value: unknown, field: string): FieldCause[] {
  if (value === undefined || value === null || value === "") return [];
  return isDNS1123Subdomain(str(value)).map((message) => fieldInvalid(field, value, message));
}

export function validateClaimResizeStatus(object: Obj): FieldCause[] {
  const causes: FieldCause[] = [];
  const statuses = at(object, "status.allocatedResourceStatuses");
  if (isRecord(statuses)) {
    // Upstream reports these under the singular path.
    const field = "status.allocatedResourceStatus";
    for (const [key, value] of Object.entries(statuses)) {
      causes.push(...resourceKeyCauses(key, field));
      if (!(CLAIM_RESOURCE_STATUSES as readonly unknown[]).includes(value))
        causes.push(fieldNotSupported(field, value, CLAIM_RESOURCE_STATUSES));
    }
  }
  const allocated = at(object, "status.allocatedResources");
  if (isRecord(allocated)) {
    for (const [key, value] of Object.entries(allocated)) {
      const field = `status.allocatedResources[${key}]`;
      causes.push(...resourceKeyCauses(key, "status.allocatedResources"));
      const quantity = tryParseQuantity(value);
      if (quantity === undefined) causes.push(fieldInvalid(field, value, "must be a quantity"));
      else if (quantity.nanos < 0n)
        causes.push(fieldInvalid(field, value, "must be greater than or equal to 0"));
    }
  }
  return causes;
}

export function validateClaimModifyStatus(object: Obj): FieldCause[] {
  const causes = classNameCauses(
    at(object, "status.currentVolumeAttributesClassName"),
    "status.currentVolumeAttributesClassName",
  );
  const modify = at(object, "status.modifyVolumeStatus");
  if (isRecord(modify)) {
    const status = modify.status;
    if (status === undefined || status === null || status === "")
      causes.push(fieldRequired("status.modifyVolumeStatus.status"));
    else if (!(MODIFY_VOLUME_STATUSES as readonly unknown[]).includes(status))
      causes.push(fieldNotSupported("status.modifyVolumeStatus.status", status, MODIFY_VOLUME_STATUSES));
    causes.push(
      ...classNameCauses(
        modify.targetVolumeAttributesClassName,
        "status.modifyVolumeStatus.targetVolumeAttributesClassName",
      ),
    );
  }
  return causes;
}
