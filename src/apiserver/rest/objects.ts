// Small pure helpers the REST verbs share: storage keys, metadata accessors, timestamps,
// generated names, and the apiVersion/kind an object carries on the way out.

import { randomInt } from "node:crypto";
import type { KubeObject, ResourceDef } from "./resource.ts";

export type Metadata = Record<string, unknown>;

/** "/<group|core>/<resource>/<namespace>/<name>" as storage/types.ts defines keys. */
export function objectKey(def: ResourceDef, namespace: string, name: string): string {
  return `${collectionPrefix(def, namespace)}${name}`;
}

/** The key prefix of a collection: one namespace, or all of them when `namespace` is "" for a namespaced kind. */
export function collectionPrefix(def: ResourceDef, namespace: string): string {
  const group = def.group === "" ? "core" : def.group;
  if (!def.namespaced) return `/${group}/${def.resource}//`;
  return namespace === "" ? `/${group}/${def.resource}/` : `/${group}/${def.resource}/${namespace}/`;
}

export function apiVersionOf(def: ResourceDef): string {
  return def.group === "" ? def.version : `${def.group}/${def.version}`;
}

export function metadataOf(object: KubeObject): Metadata {
  const meta = object.metadata;
  if (typeof meta === "object" && meta !== null && !Array.isArray(meta)) return meta;
  const created: Metadata = {};
  object.metadata = created;
  return created;
}

export function stringField(meta: Metadata, field: string): string {
  const value = meta[field];
  return typeof value === "string" ? value : "";
}

export function finalizersOf(object: KubeObject): string[] {
  const value = object.metadata?.finalizers;
  return Array.isArray(value) ? value.filter((f): f is string => typeof f === "string") : [];
}

let lastSecond = Number.NaN;
let lastTimestamp = "";

/** RFC 3339 with second precision, as metav1.Time serializes. */
export function timestamp(ms: number): string {
  // Every write stamps one; within a second they are all the same string.
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastTimestamp = new Date(second * 1000).toISOString().replace(".000Z", "Z");
    lastSecond = second;
  }
  return lastTimestamp;
}

const NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** generateName + 5 random characters from upstream's alphabet (no vowels, no look-alikes). */
export function generatedName(prefix: string): string {
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += NAME_SUFFIX_ALPHABET[randomInt(NAME_SUFFIX_ALPHABET.length)];
  return prefix.slice(0, 63 - 5) + suffix;
}

/** The object as served at this group/version: apiVersion and kind set, first in key order. */
export function forOutput(def: ResourceDef, object: KubeObject): KubeObject {
  const { apiVersion: _a, kind: _k, ...rest } = object;
  return { apiVersion: apiVersionOf(def), kind: def.kind, ...rest };
}

/**
 * How an object's output text starts (forOutput puts apiVersion and kind first): a stored text
 * that starts so is the object's output form and can be sent as is.
 */
export function outputHead(def: ResourceDef): string {
  return `{"apiVersion":${JSON.stringify(apiVersionOf(def))},"kind":${JSON.stringify(def.kind)},`;
}
