// The csi.storage.k8s.io/managed-by label value of one provisioner instance: "external-provisioner"
// for central provisioning, "external-provisioner-<node>" with --node-deployment, shortened to a
// valid label value (63 characters) exactly as upstream's getNameWithMaxLength (itself from
// openshift/library-go's namer): truncate and insert an 8-hex-digit FNV-1a hash so that two
// long node names never share a value. Upstream instances and csikit's agree on every value,
// so one can take over the objects of the other.

/** The value used by central provisioning. */
export const CENTRAL_MANAGED_BY = "external-provisioner";

/** DNS-1035 label / label value limit. */
const MAX_LENGTH = 63;

/** The managed-by value: central when nodeName is undefined, per node otherwise. */
export function managedByID(nodeName?: string): string {
  if (nodeName === undefined) return CENTRAL_MANAGED_BY;
  return nameWithMaxLength(CENTRAL_MANAGED_BY, nodeName, MAX_LENGTH);
}

/**
 * "<base>-<suffix>" if it fits in maxLength; otherwise "<base prefix>-<hash(base)>-<suffix>",
 * or, when the suffix alone is too long, "<base prefix>-<hash(base-suffix)>" cut to maxLength.
 */
export function nameWithMaxLength(base: string, suffix: string, maxLength: number): string {
  const name = base === "" ? suffix : `${base}-${suffix}`;
  if (name.length <= maxLength) return name;
  const baseLength = maxLength - 10 /* "-" + 8 hex digits + "-" */ - suffix.length;
  if (baseLength <= 0) {
    const prefix = base.slice(0, Math.max(0, maxLength - 9));
    const short = prefix === "" ? fnv32aHex(name) : `${prefix}-${fnv32aHex(name)}`;
    return short.slice(0, maxLength);
  }
  return `${base.slice(0, baseLength)}-${fnv32aHex(base)}-${suffix}`;
}

/** 32-bit FNV-1a over the UTF-8 bytes, as 8 lower-case hex digits. */
export function fnv32aHex(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}
