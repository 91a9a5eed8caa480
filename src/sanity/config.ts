// Configuration of a sanity run: the options runSanity takes, and loaders for the files the
// CLI points at — secrets in csi-test's format (one map per RPC, e.g. `CreateVolumeSecret:`)
// and CreateVolume parameters (a flat string map) — plus byte quantities ("10Mi", "1Gi").
// Secret values are never put into error messages.

import { parseByteQuantity as parseByteQuantityBig } from "../base/index.ts";
import type { PathCommands } from "./paths.ts";
import { readFile } from "node:fs/promises";
import { ValidationError } from "../base/index.ts";
import type { Logger } from "../base/index.ts";
import type { TestResult } from "./report.ts";
import type { LabelPredicate } from "./label-filter.ts";
import type { TopologyRequirement } from "./types.ts";

/** Secrets for each RPC, keyed as csi-test's secrets file keys them. All optional. */
export interface SanitySecrets {
  CreateVolumeSecret?: Record<string, string>;
  DeleteVolumeSecret?: Record<string, string>;
  ControllerPublishVolumeSecret?: Record<string, string>;
  ControllerUnpublishVolumeSecret?: Record<string, string>;
  ControllerValidateVolumeCapabilitiesSecret?: Record<string, string>;
  NodeStageVolumeSecret?: Record<string, string>;
  NodePublishVolumeSecret?: Record<string, string>;
  CreateSnapshotSecret?: Record<string, string>;
  DeleteSnapshotSecret?: Record<string, string>;
  ListSnapshotsSecret?: Record<string, string>;
  GetSnapshotSecret?: Record<string, string>;
  ControllerExpandVolumeSecret?: Record<string, string>;
  ControllerModifyVolumeSecret?: Record<string, string>;
  NodeExpandVolumeSecret?: Record<string, string>;
  CreateVolumeGroupSnapshotSecret?: Record<string, string>;
  DeleteVolumeGroupSnapshotSecret?: Record<string, string>;
  GetVolumeGroupSnapshotSecret?: Record<string, string>;
}

export const SECRET_KEYS: readonly (keyof SanitySecrets)[] = [
  "CreateVolumeSecret",
  "DeleteVolumeSecret",
  "ControllerPublishVolumeSecret",
  "ControllerUnpublishVolumeSecret",
  "ControllerValidateVolumeCapabilitiesSecret",
  "NodeStageVolumeSecret",
  "NodePublishVolumeSecret",
  "CreateSnapshotSecret",
  "DeleteSnapshotSecret",
  "ListSnapshotsSecret",
  "GetSnapshotSecret",
  "ControllerExpandVolumeSecret",
  "ControllerModifyVolumeSecret",
  "NodeExpandVolumeSecret",
  "CreateVolumeGroupSnapshotSecret",
  "DeleteVolumeGroupSnapshotSecret",
  "GetVolumeGroupSnapshotSecret",
];

export interface SanityOptions {
  /** Node (and identity) service endpoint: `unix:///path`, `unix:path` or `/path`. */
  endpoint: string;
  /** Controller service endpoint, when it is a different process. Default: `endpoint`. */
  controllerEndpoint?: string;
  /** Directory under which per-test staging dirs are made. Default: a fresh temp dir, removed after. */
  stagingDir?: string;
  /** Directory under which per-test target parents are made. Default: a fresh temp dir, removed after. */
  targetDir?: string;
  /** Size of test volumes in bytes. Default 10 MiB. */
  testVolumeSize?: number;
  /** Size test volumes are expanded to in bytes. Default twice testVolumeSize. */
  testVolumeExpandSize?: number;
  /** Secrets per RPC. Default none. */
  secrets?: SanitySecrets;
  /** Parameters for every CreateVolume. Default none. */
  parameters?: Record<string, string>;
  /**
   * Mutable parameters the driver accepts, for the ControllerModifyVolume and CreateVolume
   * `mutable_parameters` tests. Default none: those tests are skipped saying so.
   */
  mutableParameters?: Record<string, string>;
  /** Parameters for every CreateSnapshot (csi-sanity's -csi.testsnapshotparameters). Default none. */
  snapshotParameters?: Record<string, string>;
  /** accessibility_requirements of every CreateVolume (csi-sanity's -csi.testtopologyrequirements). Default none. */
  topologyRequirements?: TopologyRequirement;
  /** csi-sanity's path commands (a node that runs elsewhere); unset steps run locally. */
  pathCommands?: PathCommands;
  /** Run only tests whose full name (`Service Group name`) matches. */
  focus?: RegExp;
  /** Skip tests whose full name matches. */
  skip?: RegExp;
  /** Keep only tests whose labels (label-filter.ts testLabels) satisfy this; Ginkgo's -label-filter. */
  labelFilter?: LabelPredicate;
  /** Stop after the first failed test; the rest are not run (Ginkgo's -fail-fast). Default false. */
  failFast?: boolean;
  /** Runs of a failing test before it counts as failed; any pass passes (Ginkgo's -flake-attempts). Default 1. */
  flakeAttempts?: number;
  /**
   * Deadline of the whole run in ms (Ginkgo's -timeout): past it the running test is stopped,
   * the rest are not run, and the run fails. Default none.
   */
  runTimeoutMs?: number;
  /** Report the selected tests as skipped without contacting the driver (Ginkgo's -dry-run). */
  dryRun?: boolean;
  /**
   * Run order. Default the catalogue's. `groups`: RPC groups shuffled with the seed, tests in a
   * group in order (Ginkgo's top-level shuffle, -ginkgo.seed); `tests`: every test shuffled
   * (-ginkgo.randomize-all).
   */
  order?: { seed: number; shuffle: "groups" | "tests" };
  /** Reports a test still running after `afterMs`, then every `intervalMs` (Ginkgo's -poll-progress-after). */
  progress?: { afterMs: number; intervalMs: number; report: (test: string, elapsedMs: number) => void };
  /** How long a stopped test may take to return before its cleanup runs, in ms. Default the call deadline. */
  graceMs?: number;
  /** Deadline of each CSI call in ms. Default 30000. */
  callTimeoutMs?: number;
  /** Deadline of each test (calls and checks) in ms. Default 120000. */
  testTimeoutMs?: number;
  /** Called with each result as soon as it is known, in run order. */
  onResult?: (result: TestResult) => void;
  logger?: Logger;
}

export const DEFAULT_TEST_VOLUME_SIZE = 10 * 1024 * 1024;
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;
export const DEFAULT_TEST_TIMEOUT_MS = 120_000;

/** A positive byte count that fits a JS number, parsed by src/api's one byte-quantity parser. */
export function parseByteQuantity(text: string, what: string): number {
  const bytes = parseByteQuantityBig(text, what);
  if (bytes <= 0n || bytes > BigInt(Number.MAX_SAFE_INTEGER))
    throw new ValidationError(`${what}: ${text} is out of range`);
  return Number(bytes);
}

async function readStructured(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new ValidationError(
      `${what} ${path}: cannot read: ${error instanceof Error ? error.message : "error"}`,
    );
  }
  // Loaded only for a run given such a file: the YAML parser is 1.4 MiB of peak RSS for a sanity process
  // that has none to read (`npm run bench:rss`).
  const { parse: parseYaml } = await import("yaml");
  try {
    return parseYaml(text);
  } catch {
    // The parser's message may quote file content, which may be a secret: say only where.
    throw new ValidationError(`${what} ${path}: not valid YAML or JSON`);
  }
}

function stringMap(value: unknown, where: string): Record<string, string> {
  if (value === null || value === undefined) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new ValidationError(`${where}: want a map of string keys to string values`);
  }
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === "string") out[key] = item;
    else if (typeof item === "number" || typeof item === "boolean") out[key] = String(item);
    else throw new ValidationError(`${where}: value of ${JSON.stringify(key)} is not a string`);
  }
  return out;
}

/** Reads a secrets file in csi-test's format (YAML or JSON). Unknown top-level keys are an error. */
export async function loadSecretsFile(path: string): Promise<SanitySecrets> {
  const data = await readStructured(path, "secrets file");
  if (data === null || data === undefined) return {};
  if (typeof data !== "object" || Array.isArray(data)) {
    throw new ValidationError(`secrets file ${path}: want a map like {CreateVolumeSecret: {key: value}}`);
  }
  const secrets: SanitySecrets = {};
  for (const [key, value] of Object.entries(data)) {
    const known = SECRET_KEYS.find((k) => k === key);
    if (!known) {
      throw new ValidationError(
        `secrets file ${path}: unknown key ${JSON.stringify(key)} (known: ${SECRET_KEYS.join(", ")})`,
      );
    }
    secrets[known] = stringMap(value, `secrets file ${path}: ${key}`);
  }
  return secrets;
}

/** Reads a CreateVolume parameters file: a flat map (YAML or JSON); scalars become strings. */
export async function loadParametersFile(path: string): Promise<Record<string, string>> {
  return stringMap(await readStructured(path, "parameters file"), `parameters file ${path}`);
}

function topologies(value: unknown, where: string): Array<{ segments: Record<string, string> }> {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new ValidationError(`${where}: want a list of {segments: {key: value}}`);
  return value.map((item: unknown, i) => {
    if (typeof item !== "object" || item === null || Array.isArray(item) || !("segments" in item))
      throw new ValidationError(`${where}[${i}]: want {segments: {key: value}}`);
    return { segments: stringMap(item.segments, `${where}[${i}].segments`) };
  });
}

/**
 * Reads a topology requirement as csi-sanity's -csi.testtopologyrequirements file holds one
 * (YAML/JSON of csi.TopologyRequirement: `requisite:` and `preferred:` lists of `segments:` maps).
 */
export async function loadTopologyFile(path: string): Promise<TopologyRequirement> {
  const data = await readStructured(path, "topology requirements file");
  const where = `topology requirements file ${path}`;
  if (typeof data !== "object" || data === null || Array.isArray(data))
    throw new ValidationError(`${where}: want a map with requisite and/or preferred`);
  const unknown = Object.keys(data).filter((key) => key !== "requisite" && key !== "preferred");
  if (unknown.length > 0)
    throw new ValidationError(`${where}: unknown keys ${unknown.join(", ")} (known: requisite, preferred)`);
  const record = data as Record<string, unknown>;
  return {
    requisite: topologies(record.requisite, `${where}: requisite`),
    preferred: topologies(record.preferred, `${where}: preferred`),
  };
}
