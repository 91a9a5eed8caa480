// Small helpers the plugin translators share: reading a typed in-tree source out of a PV or pod
// volume with a clear error when it is missing or malformed, and writing objects the way Go's
// `omitempty` serialises them (no empty strings, false booleans, zero numbers or empty maps),
// so a translated object equals what the Go library would put on the wire.

import type { CSIPersistentVolumeSource, PersistentVolume, Volume } from "../api/index.ts";
import { TranslationError } from "./errors.ts";
import type { InTreeSourceField } from "./types.ts";
import { isRecord } from "../base/index.ts";

export const FSTYPE_PARAM = "fstype";
/** The StorageClass parameter the external-provisioner strips and uses as the fsType. */
export const CSI_FSTYPE_PARAM = "csi.storage.k8s.io/fstype";

export function describePV(pv: PersistentVolume): string {
  return `PersistentVolume ${JSON.stringify(pv.metadata?.name ?? "")}`;
}

export function describeVolume(volume: Volume): string {
  return `volume ${JSON.stringify(volume.name ?? "")}`;
}

/** The in-tree source object under field, or a TranslationError naming owner and field. */
export function inTreeSource(
  holder: Record<string, unknown> | undefined,
  field: InTreeSourceField,
  owner: string,
) {
  const source = holder?.[field];
  if (!isRecord(source)) throw new TranslationError(`${owner}: no ${field} source to translate`);
  return source;
}

/** A required non-empty string field of a source. */
export function requiredString(source: Record<string, unknown>, field: string, where: string): string {
  const value = source[field];
  if (typeof value !== "string" || value === "")
    throw new TranslationError(
      `${where}: ${field} is required (a non-empty string), got ${JSON.stringify(value)}`,
    );
  return value;
}

export function optionalString(source: Record<string, unknown>, field: string, where: string): string {
  const value = source[field];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string")
    throw new TranslationError(`${where}: ${field} must be a string, got ${JSON.stringify(value)}`);
  return value;
}

export function optionalBool(source: Record<string, unknown>, field: string, where: string): boolean {
  const value = source[field];
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean")
    throw new TranslationError(`${where}: ${field} must be a boolean, got ${JSON.stringify(value)}`);
  return value;
}

export function optionalInt(source: Record<string, unknown>, field: string, where: string): number {
  const value = source[field];
  if (value === undefined || value === null) return 0;
  if (typeof value !== "number" || !Number.isInteger(value))
    throw new TranslationError(`${where}: ${field} must be an integer, got ${JSON.stringify(value)}`);
  return value;
}

/** Parses a decimal integer attribute as Go's strconv.Atoi would accept it. */
export function parseIntAttribute(value: string, what: string): number {
  if (!/^[+-]?\d+$/.test(value))
    throw new TranslationError(`failed to convert ${what} ${JSON.stringify(value)} to integer`);
  return Number.parseInt(value, 10);
}

/** Drops the keys whose values Go's omitempty would drop. */
export function omitEmpty<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || v === "" || v === false || v === 0) continue;
    if (isRecord(v) && Object.keys(v).length === 0) continue;
    out[key] = v;
  }
  return out as T;
}

/** A CSI PV source with omitempty applied (driver and volumeHandle are always written). */
export function csiSource(source: CSIPersistentVolumeSource): CSIPersistentVolumeSource {
  return { ...omitEmpty(source), driver: source.driver, volumeHandle: source.volumeHandle };
}

/** Moves a PV from its in-tree source to the CSI source (one source only, as the API requires). */
export function setCSISource(
  pv: PersistentVolume,
  field: InTreeSourceField,
  csi: CSIPersistentVolumeSource,
): void {
  const spec = (pv.spec ??= {});
  delete spec[field];
  spec.csi = csi;
}

/** Moves a PV from the CSI source to an in-tree source. */
export function setInTreeSource(pv: PersistentVolume, field: InTreeSourceField, source: object): void {
  const spec = (pv.spec ??= {});
  delete spec.csi;
  spec[field] = source;
}

/** The CSI source of a PV, or a TranslationError. */
export function csiSourceOf(pv: PersistentVolume): CSIPersistentVolumeSource {
  const csi = pv.spec?.csi;
  if (csi === undefined || !isRecord(csi))
    throw new TranslationError(`${describePV(pv)}: no csi source to translate`);
  return csi;
}
