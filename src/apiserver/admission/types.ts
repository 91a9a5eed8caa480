// The shapes admission plugins implement (admission.ts holds the chain and the storage
// plugins; node-restriction.ts the plugin that reads the requesting user).

import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import type { Store } from "../storage/types.ts";
import type { UserInfo } from "../auth/authn.ts";

export interface AdmissionContext {
  store: Store;
}

/** One write as a validating plugin sees it (upstream's admission.Attributes). */
export interface AdmissionRequest {
  /** Who asked; absent for the server's own writes (namespace reaper, bootstrap policy). */
  user?: UserInfo;
  operation: "CREATE" | "UPDATE" | "DELETE";
  def: ResourceDef;
  subresource: string;
  namespace: string;
  /** The name in the URL; "" on a create (the object's name is in `object`). */
  name: string;
  /** The object as it would be stored (CREATE, UPDATE), or the request's body for a subresource create. */
  object?: KubeObject;
  /** The stored object (UPDATE, DELETE). */
  old?: KubeObject;
}

export interface AdmissionPlugin {
  /** kube-apiserver's plugin name, as --enable-admission-plugins takes it. */
  readonly name: string;
  /** Mutates `object` (already defaulted) before validation. */
  admitCreate(context: AdmissionContext, def: ResourceDef, object: KubeObject): void;
  /** Validates an update (after the kind's validation); throws the ApiError to answer. */
  validateUpdate?(
    context: AdmissionContext,
    def: ResourceDef,
    subresource: string,
    object: KubeObject,
    old: KubeObject,
  ): void;
  /** Validates any write with its user (create, update, delete); throws the ApiError to answer. */
  validate?(context: AdmissionContext, request: AdmissionRequest): void;
}
