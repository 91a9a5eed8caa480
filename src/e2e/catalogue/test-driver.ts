// The external test driver definition (`--storage.testdriver` in upstream's e2e.test): the typed
// shape of the YAML/JSON file and a parser that checks it. Field names, defaults and precedence
// follow upstream's test/e2e/storage/external driverDefinition and storage/framework DriverInfo
// (see README.md for the versions read).
//
// Upstream decodes leniently: keys it does not know are silently dropped (its own example file
// carries one), field names are case-sensitive, and a bad Timeouts duration only logs and falls
// back to every default. We keep the leniency for unknown keys but never silently: each one comes
// back as a warning naming its path, and `strict: true` turns them into errors. Type errors and
// bad durations are always errors, because a run with silently different settings is worse than
// no run.

import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve as resolvePath } from "node:path";
import { parse as parseYaml } from "yaml";

/** Where a StorageClass / SnapshotClass / VolumeAttributesClass / GroupSnapshotClass comes from. */
export interface ClassSource {
  /** A class with DriverInfo.Name as provisioner/driver and no parameters. */
  FromName: boolean;
  /** A manifest file holding exactly one class. Used only when FromName is false. */
  FromFile: string;
  /** A class already installed in the cluster, copied for the test. */
  FromExistingClassName: string;
}

/** e2evolume.SizeRange: Kubernetes quantities; empty means "no bound". */
export interface SizeRange {
  Min: string;
  Max: string;
  /** Expansion step used by volume-expand (default 1Gi there). */
  Step: string;
}

export interface StressTestOptions {
  NumPods: number;
  NumRestarts: number;
}

export interface VolumeSnapshotStressTestOptions {
  NumPods: number;
  NumSnapshots: number;
}

export interface PerformanceTestOptions {
  ProvisioningOptions: {
    VolumeSize: string;
    Count: number;
    /** AvgLatency is a Go duration in nanoseconds once decoded; kept as written. */
    ExpectedMetrics: { AvgLatency: number; Throughput: number } | null;
  } | null;
}

export interface DriverInfo {
  Name: string;
  InTreePluginName: string;
  /** Extra texts/labels appended after "[Driver: name]" in every test name. */
  TestTags: string[];
  MaxFileSize: number;
  SupportedSizeRange: SizeRange;
  /** "" stands for the default file system; upstream's default is [""]. */
  SupportedFsType: string[];
  /** null (unset) is distinct from []: provisioning's mount-option test skips only on null. */
  SupportedMountOption: string[] | null;
  RequiredMountOption: string[] | null;
  Capabilities: Record<string, boolean>;
  RequiredAccessModes: string[];
  TopologyKeys: string[];
  NumAllowedTopologies: number;
  StressTestOptions: StressTestOptions | null;
  VolumeSnapshotStressTestOptions: VolumeSnapshotStressTestOptions | null;
  VolumeGroupSnapshotStressTestOptions: VolumeSnapshotStressTestOptions | null;
  PerformanceTestOptions: PerformanceTestOptions | null;
}

export interface InlineVolume {
  /** Passed as NodePublishVolumeRequest.volume_context. */
  Attributes: Record<string, string>;
  /** Whether pods using the same attributes see each other's data. */
  Shared: boolean;
  /** The driver only supports read-only mounts. */
  ReadOnly: boolean;
}

export interface DriverDefinition {
  DriverInfo: DriverInfo;
  StorageClass: ClassSource;
  SnapshotClass: ClassSource;
  VolumeAttributesClass: ClassSource;
  GroupSnapshotClass: ClassSource;
  InlineVolumes: InlineVolume[];
  ClientNodeName: string;
  NodeSelectors: Record<string, string>;
  /** Canonical TimeoutContext key → milliseconds, only for keys the file sets. */
  Timeouts: Partial<Record<TimeoutKey, number>>;
}

/** Every capability key upstream's storage framework defines (string values of its constants). */
export const CAPABILITIES = [
  "persistence",
  "block",
  "fsGroup",
  "volumeMountGroup",
  "exec",
  "snapshotDataSource",
  "pvcDataSource",
  "offlineSnapshotClone",
  "multipods",
  "RWX",
  "controllerExpansion",
  "nodeExpansion",
  "offlineExpansion",
  "onlineExpansion",
  "volumeLimits",
  "singleNodeVolume",
  "topology",
  "capacity",
  "FSResizeFromSourceNotSupported",
  "readWriteOncePod",
  "multiplePVsSameID",
  "capReadOnlyMany",
  // CapVolumeGroupSnapshot: the constant is confirmed, its string value was not found in the
  // sources read (see README "Uncertain").
  "groupSnapshot",
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** framework.TimeoutContext fields with upstream's defaults in milliseconds. */
export const DEFAULT_TIMEOUTS = {
  Poll: 2_000,
  PodStart: 5 * 60_000,
  PodStartShort: 2 * 60_000,
  PodStartSlow: 15 * 60_000,
  PodDelete: 5 * 60_000,
  ClaimProvision: 5 * 60_000,
  ClaimProvisionShort: 60_000,
  DataSourceProvision: 5 * 60_000,
  ClaimBound: 3 * 60_000,
  PVReclaim: 3 * 60_000,
  PVBound: 3 * 60_000,
  PVCreate: 3 * 60_000,
  PVDelete: 5 * 60_000,
  PVDeleteSlow: 20 * 60_000,
  SnapshotCreate: 5 * 60_000,
  SnapshotDelete: 5 * 60_000,
  SnapshotControllerMetrics: 5 * 60_000,
  SystemPodsStartup: 10 * 60_000,
  NodeSchedulable: 30 * 60_000,
  SystemDaemonsetStartup: 5 * 60_000,
} as const;
export type TimeoutKey = keyof typeof DEFAULT_TIMEOUTS;
const TIMEOUT_KEYS = Object.keys(DEFAULT_TIMEOUTS) as TimeoutKey[];

/** The effective timeouts: upstream's defaults overridden by the file's. */
export function effectiveTimeouts(def: DriverDefinition): Record<TimeoutKey, number> {
  return { ...DEFAULT_TIMEOUTS, ...def.Timeouts };
}

/** Which ClassSource field wins, in upstream's order (FromName, then existing class, then file). */
export function classSourceKind(src: ClassSource): "name" | "existing" | "file" | null {
  if (src.FromName) return "name";
  if (src.FromExistingClassName !== "") return "existing";
  if (src.FromFile !== "") return "file";
  return null;
}

export interface ParseOptions {
  /** Shown in messages (a file name). Default "test driver". */
  source?: string;
  /** Unknown keys are errors instead of warnings. Default false (upstream ignores them). */
  strict?: boolean;
}

export interface ParseResult {
  definition: DriverDefinition;
  /** Keys upstream would silently ignore, and settings it would silently resolve. */
  warnings: string[];
}

/** A definition file that cannot be used; `problems` lists each, with its key path. */
export class TestDriverError extends Error {
  readonly problems: readonly string[];
  constructor(source: string, problems: readonly string[]) {
    super(`${source}: ${problems.join("; ")}`);
    this.name = "TestDriverError";
    this.problems = problems;
  }
}

export async function loadTestDriver(
  path: string,
  options: Omit<ParseOptions, "source"> = {},
): Promise<ParseResult> {
  const text = await readFile(path, "utf8");
  const result = parseTestDriver(text, { ...options, source: path });
  // A class manifest named relative to the file is found next to it, wherever csikit runs.
  const { definition } = result;
  for (const source of [
    definition.StorageClass,
    definition.SnapshotClass,
    definition.VolumeAttributesClass,
    definition.GroupSnapshotClass,
  ])
    if (source.FromFile !== "" && !isAbsolute(source.FromFile))
      source.FromFile = resolvePath(dirname(path), source.FromFile);
  return result;
}

export function parseTestDriver(text: string, options: ParseOptions = {}): ParseResult {
  const source = options.source ?? "test driver";
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new TestDriverError(source, [`not valid YAML/JSON: ${(err as Error).message.split("\n")[0]}`]);
  }
  const d = new Decoder();
  const definition = d.definition(doc);
  if (definition.DriverInfo.Name === "") d.errors.push("DriverInfo.Name not set");
  if (options.strict === true) d.errors.push(...d.unknown);
  if (d.errors.length > 0) throw new TestDriverError(source, d.errors);
  applyExpansionDefaults(definition.DriverInfo.Capabilities);
  return { definition, warnings: [...d.unknown, ...d.notes] };
}

// Upstream: controllerExpansion without explicit online/offline expansion implies both.
function applyExpansionDefaults(caps: Record<string, boolean>): void {
  if (caps["controllerExpansion"] !== true) return;
  if (!("onlineExpansion" in caps)) caps["onlineExpansion"] = true;
  if (!("offlineExpansion" in caps)) caps["offlineExpansion"] = true;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Collects errors and unknown keys while turning the loose document into the typed shape. */
class Decoder {
  readonly errors: string[] = [];
  readonly unknown: string[] = [];
  readonly notes: string[] = [];

  definition(doc: unknown): DriverDefinition {
    const o = this.struct(doc, "", [
      "DriverInfo",
      "StorageClass",
      "SnapshotClass",
      "VolumeAttributesClass",
      "GroupSnapshotClass",
      "InlineVolumes",
      "ClientNodeName",
      "NodeSelectors",
      "Timeouts",
    ]);
    return {
      DriverInfo: this.driverInfo(o["DriverInfo"], "DriverInfo"),
      StorageClass: this.classSource(o["StorageClass"], "StorageClass"),
      SnapshotClass: this.classSource(o["SnapshotClass"], "SnapshotClass"),
      VolumeAttributesClass: this.classSource(o["VolumeAttributesClass"], "VolumeAttributesClass"),
      GroupSnapshotClass: this.classSource(o["GroupSnapshotClass"], "GroupSnapshotClass"),
      InlineVolumes: this.list(o["InlineVolumes"], "InlineVolumes", (v, p) => this.inlineVolume(v, p)),
      ClientNodeName: this.str(o["ClientNodeName"], "ClientNodeName"),
      NodeSelectors: this.stringMap(o["NodeSelectors"], "NodeSelectors"),
      Timeouts: this.timeouts(o["Timeouts"], "Timeouts"),
    };
  }

  driverInfo(v: unknown, path: string): DriverInfo {
    const o = this.struct(v, path, [
      "Name",
      "InTreePluginName",
      "TestTags",
      "MaxFileSize",
      "SupportedSizeRange",
      "SupportedFsType",
      "SupportedMountOption",
      "RequiredMountOption",
      "Capabilities",
      "RequiredAccessModes",
      "TopologyKeys",
      "NumAllowedTopologies",
      "StressTestOptions",
      "VolumeSnapshotStressTestOptions",
      "VolumeGroupSnapshotStressTestOptions",
      "PerformanceTestOptions",
    ]);
    const p = (k: string): string => `${path}.${k}`;
    return {
      Name: this.str(o["Name"], p("Name")),
      InTreePluginName: this.str(o["InTreePluginName"], p("InTreePluginName")),
      TestTags: this.stringList(o["TestTags"], p("TestTags")),
      MaxFileSize: this.int(o["MaxFileSize"], p("MaxFileSize")),
      SupportedSizeRange: this.sizeRange(o["SupportedSizeRange"], p("SupportedSizeRange")),
      // Upstream pre-fills [""] and a set decoded from the file replaces it.
      SupportedFsType:
        o["SupportedFsType"] == null ? [""] : this.stringList(o["SupportedFsType"], p("SupportedFsType")),
      SupportedMountOption: this.optionalStringList(o["SupportedMountOption"], p("SupportedMountOption")),
      RequiredMountOption: this.optionalStringList(o["RequiredMountOption"], p("RequiredMountOption")),
      Capabilities: this.capabilities(o["Capabilities"], p("Capabilities")),
      RequiredAccessModes: this.accessModes(o["RequiredAccessModes"], p("RequiredAccessModes")),
      TopologyKeys: this.stringList(o["TopologyKeys"], p("TopologyKeys")),
      NumAllowedTopologies: this.int(o["NumAllowedTopologies"], p("NumAllowedTopologies")),
      StressTestOptions: this.optional(o["StressTestOptions"], (x) =>
        this.counts(x, p("StressTestOptions"), "NumPods", "NumRestarts"),
      ),
      VolumeSnapshotStressTestOptions: this.optional(o["VolumeSnapshotStressTestOptions"], (x) =>
        this.snapshotStress(x, p("VolumeSnapshotStressTestOptions")),
      ),
      VolumeGroupSnapshotStressTestOptions: this.optional(o["VolumeGroupSnapshotStressTestOptions"], (x) =>
        this.snapshotStress(x, p("VolumeGroupSnapshotStressTestOptions")),
      ),
      PerformanceTestOptions: this.optional(o["PerformanceTestOptions"], (x) =>
        this.performance(x, p("PerformanceTestOptions")),
      ),
    };
  }

  classSource(v: unknown, path: string): ClassSource {
    const o = this.struct(v, path, ["FromName", "FromFile", "FromExistingClassName"]);
    const src = {
      FromName: this.bool(o["FromName"], `${path}.FromName`),
      FromFile: this.str(o["FromFile"], `${path}.FromFile`),
      FromExistingClassName: this.str(o["FromExistingClassName"], `${path}.FromExistingClassName`),
    };
    const set = [src.FromName, src.FromFile !== "", src.FromExistingClassName !== ""].filter(Boolean).length;
    if (set > 1) this.notes.push(`${path}: more than one source set; upstream uses ${classSourceKind(src)}`);
    return src;
  }

  inlineVolume(v: unknown, path: string): InlineVolume {
    const o = this.struct(v, path, ["Attributes", "Shared", "ReadOnly"]);
    return {
      Attributes: this.stringMap(o["Attributes"], `${path}.Attributes`),
      Shared: this.bool(o["Shared"], `${path}.Shared`),
      ReadOnly: this.bool(o["ReadOnly"], `${path}.ReadOnly`),
    };
  }

  sizeRange(v: unknown, path: string): SizeRange {
    // Upstream pre-fills Min "5Gi"; a SupportedSizeRange in the file replaces the whole struct.
    if (v == null) return { Min: "5Gi", Max: "", Step: "" };
    const o = this.struct(v, path, ["Min", "Max", "Step"]);
    const range = { Min: "", Max: "", Step: "" };
    for (const k of ["Min", "Max", "Step"] as const) {
      range[k] = this.str(o[k], `${path}.${k}`);
      if (range[k] !== "" && !QUANTITY.test(range[k]))
        this.errors.push(`${path}.${k}: ${JSON.stringify(range[k])} is not a quantity (like 1Gi)`);
    }
    return range;
  }

  capabilities(v: unknown, path: string): Record<string, boolean> {
    const caps: Record<string, boolean> = {};
    if (v == null) return caps;
    if (!isObj(v)) {
      this.errors.push(`${path}: want a map of capability: true|false`);
      return caps;
    }
    for (const [k, val] of Object.entries(v)) {
      caps[k] = this.bool(val, `${path}.${k}`);
      // Upstream keeps any key; an unknown one is almost always a typo that silently disables tests.
      if (!(CAPABILITIES as readonly string[]).includes(k))
        this.unknown.push(`${path}.${k}: unknown capability${hint(k, CAPABILITIES)}`);
    }
    return caps;
  }

  accessModes(v: unknown, path: string): string[] {
    const modes = this.stringList(v, path);
    modes.forEach((m, i) => {
      if (!ACCESS_MODES.includes(m))
        this.errors.push(
          `${path}[${i}]: ${JSON.stringify(m)} is not an access mode (${ACCESS_MODES.join(", ")})`,
        );
    });
    return modes;
  }

  timeouts(v: unknown, path: string): Partial<Record<TimeoutKey, number>> {
    const out: Partial<Record<TimeoutKey, number>> = {};
    if (v == null) return out;
    if (!isObj(v)) {
      this.errors.push(`${path}: want a map of name: duration`);
      return out;
    }
    for (const [k, val] of Object.entries(v)) {
      // Upstream unmarshals these with encoding/json, which matches field names case-insensitively.
      const key = TIMEOUT_KEYS.find((t) => t.toLowerCase() === k.toLowerCase());
      if (key === undefined) {
        this.unknown.push(`${path}.${k}: unknown timeout${hint(k, TIMEOUT_KEYS)}`);
        continue;
      }
      if (typeof val !== "string") {
        this.errors.push(`${path}.${k}: want a duration string like "5m", got ${typeName(val)}`);
        continue;
      }
      const ms = parseGoDuration(val);
      if (ms === null)
        this.errors.push(`${path}.${k}: ${JSON.stringify(val)} is not a Go duration (like 5m30s)`);
      else out[key] = ms;
    }
    return out;
  }

  snapshotStress(v: unknown, path: string): VolumeSnapshotStressTestOptions {
    const c = this.counts(v, path, "NumPods", "NumSnapshots");
    return { NumPods: c.NumPods, NumSnapshots: c.NumSnapshots };
  }

  counts<A extends string, B extends string>(v: unknown, path: string, a: A, b: B): Record<A | B, number> {
    const o = this.struct(v, path, [a, b]);
    return { [a]: this.int(o[a], `${path}.${a}`), [b]: this.int(o[b], `${path}.${b}`) } as Record<
      A | B,
      number
    >;
  }

  performance(v: unknown, path: string): PerformanceTestOptions {
    const o = this.struct(v, path, ["ProvisioningOptions"]);
    const pp = `${path}.ProvisioningOptions`;
    return {
      ProvisioningOptions: this.optional(o["ProvisioningOptions"], (x) => {
        const po = this.struct(x, pp, ["VolumeSize", "Count", "ExpectedMetrics"]);
        return {
          VolumeSize: this.str(po["VolumeSize"], `${pp}.VolumeSize`),
          Count: this.int(po["Count"], `${pp}.Count`),
          ExpectedMetrics: this.optional(po["ExpectedMetrics"], (m) => {
            const mo = this.struct(m, `${pp}.ExpectedMetrics`, ["AvgLatency", "Throughput"]);
            return {
              AvgLatency: this.int(mo["AvgLatency"], `${pp}.ExpectedMetrics.AvgLatency`),
              Throughput: this.num(mo["Throughput"], `${pp}.ExpectedMetrics.Throughput`),
            };
          }),
        };
      }),
    };
  }

  // --- primitives -------------------------------------------------------------------------

  /** The object's known fields; unknown ones are recorded with a did-you-mean hint. */
  struct(v: unknown, path: string, fields: readonly string[]): Obj {
    if (v == null) return {};
    if (!isObj(v)) {
      this.errors.push(`${path || "document"}: want a map, got ${typeName(v)}`);
      return {};
    }
    for (const k of Object.keys(v)) {
      if (!fields.includes(k))
        this.unknown.push(
          `${path ? `${path}.` : ""}${k}: unknown key, ignored by upstream${hint(k, fields)}`,
        );
    }
    return v;
  }

  optional<T>(v: unknown, decode: (v: unknown) => T): T | null {
    return v == null ? null : decode(v);
  }

  list<T>(v: unknown, path: string, item: (v: unknown, path: string) => T): T[] {
    if (v == null) return [];
    if (!Array.isArray(v)) {
      this.errors.push(`${path}: want a list, got ${typeName(v)}`);
      return [];
    }
    return v.map((x, i) => item(x, `${path}[${i}]`));
  }

  stringList(v: unknown, path: string): string[] {
    return this.list(v, path, (x, p) => this.str(x ?? "", p));
  }

  optionalStringList(v: unknown, path: string): string[] | null {
    return v == null ? null : this.stringList(v, path);
  }

  stringMap(v: unknown, path: string): Record<string, string> {
    const out: Record<string, string> = {};
    if (v == null) return out;
    if (!isObj(v)) {
      this.errors.push(`${path}: want a map of strings, got ${typeName(v)}`);
      return out;
    }
    for (const [k, val] of Object.entries(v)) out[k] = this.str(val, `${path}.${k}`);
    return out;
  }

  str(v: unknown, path: string): string {
    if (v == null) return "";
    if (typeof v === "string") return v;
    this.errors.push(`${path}: want a string, got ${typeName(v)}`);
    return "";
  }

  bool(v: unknown, path: string): boolean {
    if (v == null) return false;
    if (typeof v === "boolean") return v;
    this.errors.push(`${path}: want true or false, got ${typeName(v)}`);
    return false;
  }

  int(v: unknown, path: string): number {
    if (v == null) return 0;
    if (typeof v === "number" && Number.isSafeInteger(v)) return v;
    this.errors.push(`${path}: want an integer, got ${typeName(v)}`);
    return 0;
  }

  num(v: unknown, path: string): number {
    if (v == null) return 0;
    if (typeof v === "number" && Number.isFinite(v)) return v;
    this.errors.push(`${path}: want a number, got ${typeName(v)}`);
    return 0;
  }
}

const ACCESS_MODES = ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"];
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+))?$/;

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a map";
  return `${typeof v} ${JSON.stringify(v)}`;
}

// A key that differs only in case is the common mistake (upstream's decoder is case-sensitive).
function hint(key: string, known: readonly string[]): string {
  const same = known.find((k) => k.toLowerCase() === key.toLowerCase());
  return same !== undefined ? ` (did you mean ${same}?)` : "";
}

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's time.ParseDuration ("1h2m3.5s", "300ms", "-1m", "0"), in milliseconds; null if invalid. */
export function parseGoDuration(text: string): number | null {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s.startsWith("-")) sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return null;
  let total = 0;
  const part = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  while (s !== "") {
    const m = part.exec(s);
    if (m === null) return null;
    total += Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? NaN);
    s = s.slice(m[0].length);
  }
  return Number.isFinite(total) ? sign * total : null;
}
