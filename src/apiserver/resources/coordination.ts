// coordination.k8s.io/v1 leases (leader election): spec rules and the HOLDER printer column.

import { fieldInvalid } from "../../api/index.ts";
import type { FieldCause, ResourceDef } from "../rest/resource.ts";
import { AGE_COLUMN, NAME_COLUMN, age, at, column, defineResource, nameOf, str } from "./common.ts";

export const leases: ResourceDef = defineResource({
  group: "coordination.k8s.io",
  version: "v1",
  resource: "leases",
  allowUnconditionalUpdate: false,
  allowCreateOnUpdate: true,
  kind: "Lease",
  namespaced: true,
  validate(object) {
    const causes: FieldCause[] = [];
    const duration = at(object, "spec.leaseDurationSeconds");
    if (duration !== undefined && duration !== null && (typeof duration !== "number" || duration <= 0)) {
      causes.push(fieldInvalid("spec.leaseDurationSeconds", duration, "must be greater than 0"));
    }
    const transitions = at(object, "spec.leaseTransitions");
    if (
      transitions !== undefined &&
      transitions !== null &&
      (typeof transitions !== "number" || transitions < 0)
    ) {
      causes.push(fieldInvalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"));
    }
    for (const key of ["acquireTime", "renewTime"]) {
      const value = at(object, `spec.${key}`);
      if (
        value !== undefined &&
        value !== null &&
        (typeof value !== "string" || Number.isNaN(Date.parse(value)))
      ) {
        causes.push(fieldInvalid(`spec.${key}`, value, "must be an RFC 3339 date-time"));
      }
    }
    return causes;
  },
  specChanged: () => false,
  columns: [
    NAME_COLUMN,
    column(
      "Holder",
      "string",
      "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
    ),
    AGE_COLUMN,
  ],
  row(object, now) {
    return [nameOf(object), str(at(object, "spec.holderIdentity")), age(object, now)];
  },
});
