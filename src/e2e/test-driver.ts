// Reads the driver under test from a test-driver file, the format Kubernetes' external storage
// e2e reads (`-storage.testdriver`): only the fields the runner uses so far — DriverInfo.Name,
// Capabilities, SupportedMountOption, SupportedSizeRange.Min, StorageClass.FromExistingClassName.
// STAND-IN: to be replaced by the catalogue's full parser (src/e2e/catalogue/); it returns the
// same E2eDriver so the swap touches this file and its callers only.

import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import { CsikitError, isRecord } from "../base/index.ts";
import type { E2eDriver } from "./model.ts";

/** Claim size when the driver gives no SupportedSizeRange.Min (csikit hostpath keeps directories). */
export const DEFAULT_CLAIM_SIZE = "1Mi";

/** The built-in description of csikit's hostpath driver (used without --test-driver). */
export function hostpathDriver(name: string): E2eDriver {
  return {
    name,
    capabilities: {
      persistence: true,
      exec: true,
      multipods: true,
      controllerExpansion: true,
      nodeExpansion: true,
    },
    supportedMountOptions: [],
    claimSize: DEFAULT_CLAIM_SIZE,
  };
}

function invalid(file: string, what: string): CsikitError {
  return new CsikitError("CSIKIT_ERR_VALIDATION", `test driver ${file}: ${what}`);
}

/** Parses a test-driver document; `file` names it in errors. */
export function parseTestDriver(text: string, file: string): E2eDriver {
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw invalid(file, `not YAML: ${(error as Error).message}`);
  }
  if (!isRecord(document)) throw invalid(file, "want a mapping with DriverInfo");
  const info = document["DriverInfo"];
  if (!isRecord(info)) throw invalid(file, "DriverInfo is missing or not a mapping");
  const name = info["Name"];
  if (typeof name !== "string" || name === "") throw invalid(file, "DriverInfo.Name is missing");
  const capabilities: Record<string, boolean> = {};
  const given = info["Capabilities"] ?? {};
  if (!isRecord(given)) throw invalid(file, "DriverInfo.Capabilities is not a mapping");
  for (const [key, value] of Object.entries(given)) {
    if (typeof value !== "boolean")
      throw invalid(file, `DriverInfo.Capabilities.${key} is not true or false`);
    capabilities[key] = value;
  }
  // Upstream's sets.String: a mapping of option → {} (a list is taken too).
  const options = info["SupportedMountOption"] ?? {};
  const supportedMountOptions = Array.isArray(options)
    ? options.map(String)
    : isRecord(options)
      ? Object.keys(options)
      : undefined;
  if (supportedMountOptions === undefined)
    throw invalid(file, "DriverInfo.SupportedMountOption is not a mapping");
  const range = info["SupportedSizeRange"];
  const min =
    isRecord(range) && typeof range["Min"] === "string" && range["Min"] !== "" ? range["Min"] : undefined;
  const storageClass = document["StorageClass"];
  const existing = isRecord(storageClass) ? storageClass["FromExistingClassName"] : undefined;
  if (existing !== undefined && (typeof existing !== "string" || existing === ""))
    throw invalid(file, "StorageClass.FromExistingClassName is not a name");
  return {
    name,
    capabilities,
    supportedMountOptions,
    claimSize: min ?? DEFAULT_CLAIM_SIZE,
    ...(existing !== undefined ? { existingClassName: existing } : {}),
  };
}

export async function readTestDriver(file: string): Promise<E2eDriver> {
  return parseTestDriver(await readFile(file, "utf8"), file);
}
