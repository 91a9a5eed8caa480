// The shapes the REST verbs share: the context they run in (store, registry, clock), the
// object a request addresses, a verb's result, and the options of writes.

import type { Clock } from "../../base/index.ts";
import type { KubeObject, ResourceDef, ResourceRegistry } from "./resource.ts";
import type { Store } from "../storage/types.ts";
import { badRequest, type Status } from "../transport/status.ts";
import type { AdmissionPlugin, AdmissionRequest } from "../admission/admission.ts";
import type { UserInfo } from "../auth/authn.ts";

export interface RestContext {
  store: Store;
  registry: ResourceRegistry;
  clock: Clock;
  /** Add the garbage collector's `foregroundDeletion`/`orphan` finalizers on delete (upstream always does). */
  gcFinalizers: boolean;
  /** Mutating admission run on create, after defaulting and before validation. */
  admission: readonly AdmissionPlugin[];
  /**
   * The requester's check of a create or update about to be stored, after validation (RBAC
   * escalation prevention, auth/escalation.ts); absent for the server's own writes.
   */
  checkWrite?: (write: { def: ResourceDef; namespace: string; object: KubeObject; old?: KubeObject }) => void;
  /** The requesting user (for plugins that restrict by identity); absent for the server's own writes. */
  user?: UserInfo;
}

/** Runs every plugin's user-aware validation of one write (admission.ts, node-restriction.ts). */
export function validateAdmission(ctx: RestContext, request: Omit<AdmissionRequest, "user">): void {
  for (const plugin of ctx.admission)
    plugin.validate?.(ctx, ctx.user !== undefined ? { ...request, user: ctx.user } : request);
}

export interface Target {
  def: ResourceDef;
  namespace: string;
  name: string;
  subresource: string;
}

export interface RestResult {
  code: number;
  body: KubeObject | Status;
  /**
   * The answer already encoded as JSON text, whole or in pieces sent one after the other, instead
   * of encoding `body` (a list spliced from the store's stored texts: `body` then holds the same
   * document without its items; a GET sent as stored: `body` then holds its apiVersion, kind and
   * metadata name, namespace and resourceVersion only; a write's answer: `body` is the object,
   * decoded when first read).
   */
  encoded?: string | readonly string[];
  /** The answer already encoded as protobuf (a list built from stored items), sent as is. */
  bytes?: Buffer;
}

export const NAMESPACE_KEY_PREFIX = "/core/namespaces//";

export interface WriteOptions {
  dryRun: boolean;
  /** The `fieldValidation` query parameter: unknown fields fail (Strict), warn (Warn, the default) or pass (Ignore). */
  fieldValidation?: FieldValidation;
  /** Collects warnings for the response's Warning headers. */
  warnings?: string[];
  /** Paths of keys the JSON body repeats: reported with the unknown fields, as strict decoding does. */
  duplicateFields?: string[];
}

export type FieldValidation = "Strict" | "Warn" | "Ignore";

export function parseFieldValidation(value: string | null): FieldValidation {
  if (value === null || value === "") return "Warn";
  if (value === "Strict" || value === "Warn" || value === "Ignore") return value;
  throw badRequest(
    `fieldValidation: Unsupported value: "${value}": supported values: "Ignore", "Strict", "Warn"`,
  );
}

/** The list parameters of a request, as given. */
export interface ListQuery {
  labelSelector: string | null;
  fieldSelector: string | null;
  limit: string | null;
  continueToken: string | null;
  resourceVersion: string | null;
  resourceVersionMatch: string | null;
  /** Given on a list (not a watch) only to be refused, as upstream's ValidateListOptions does. */
  sendInitialEvents?: string | null;
}
