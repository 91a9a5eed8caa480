// The one secret redactor (CONVENTIONS.md §15): the generated secret table, built from the
// proto's csi_secret markers, says which fields hold secrets and which message fields can
// lead to one. No name heuristics. Used by the server and client logging wrappers.

import { secretTable } from "./generated/secrets.ts";

export const STRIPPED = "***stripped***";

/**
 * The one secret that travels outside a csi_secret field: the kubelet puts the pod's
 * ServiceAccount tokens (CSIDriver tokenRequests) into NodePublishVolume's volume_context under
 * this key. Drivers that logged volume_context leaked them upstream; csikit strips the entry.
 */
const TOKENS_CONTEXT_KEY = "csi.storage.k8s.io/serviceAccount.tokens";
const CONTEXT_FIELDS = new Set(["volumeContext", "volume_context"]);

/**
 * A deep copy of `message` (a decoded or input message of type `messageType`, e.g.
 * "csi.v1.CreateVolumeRequest") with every non-empty csi_secret field replaced as a whole by
 * "***stripped***" (a map loses its keys too, as upstream). Empty values stay empty so a log
 * still shows that no secret was given.
 */
export function sanitizeRequest(messageType: string, message: unknown): unknown {
  return copyMessage(messageType, message);
}

function copyMessage(messageType: string, message: unknown): unknown {
  if (Array.isArray(message)) return message.map((item) => copyMessage(messageType, item));
  if (!isPlainObject(message)) return copyValue(message);
  const entry = secretTable[messageType];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message)) {
    if (entry?.secrets.includes(key)) out[key] = redact(value);
    else if (CONTEXT_FIELDS.has(key) && isPlainObject(value) && Object.hasOwn(value, TOKENS_CONTEXT_KEY)) {
      out[key] = { ...(copyValue(value) as Record<string, unknown>), [TOKENS_CONTEXT_KEY]: STRIPPED };
    } else {
      const nested = entry?.messages[key];
      out[key] = nested === undefined ? copyValue(value) : copyMessage(nested, value);
    }
  }
  return out;
}

function redact(value: unknown): unknown {
  if (value === undefined || value === null || value === "") return value;
  // An empty map or list says "no secret given" and reveals nothing; anything else is replaced
  // whole, keys included, as upstream's protosanitizer prints it ("secrets":"***stripped***").
  if (Array.isArray(value) && value.length === 0) return value;
  if (isPlainObject(value) && Object.keys(value).length === 0) return value;
  return STRIPPED;
}

function copyValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyValue);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = copyValue(item);
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
