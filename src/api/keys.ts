// Object keys as client-go's cache uses them: "namespace/name", or "name" for cluster-scoped
// objects. Work queues hold these keys.

import { ValidationError } from "../base/index.ts";
import type { ObjectMeta } from "./meta.ts";

export interface ObjectKey {
  namespace: string;
  name: string;
}

/** "ns/name" or "name" (client-go's MetaNamespaceKeyFunc). */
export function objectKey(object: { metadata?: Pick<ObjectMeta, "name" | "namespace"> }): string {
  const namespace = object.metadata?.namespace ?? "";
  const name = object.metadata?.name ?? "";
  return namespace === "" ? name : `${namespace}/${name}`;
}

export function keyOf(namespace: string | undefined, name: string): string {
  return namespace === undefined || namespace === "" ? name : `${namespace}/${name}`;
}

/** Splits a key; throws ValidationError on more than one "/". */
export function splitKey(key: string): ObjectKey {
  const parts = key.split("/");
  if (parts.length === 1) return { namespace: "", name: parts[0] ?? "" };
  if (parts.length === 2) return { namespace: parts[0] ?? "", name: parts[1] ?? "" };
  throw new ValidationError(`unexpected key format: ${JSON.stringify(key)}`);
}
