// Import-rule and cycle check (run by `npm test`): layers point one way (DESIGN.md), other
// folders are reached only through their index.ts, and no module cycle exists. Default-deny:
// a top-level folder not listed here may import nothing but base. npm packages are layered
// too: each folder may import only the packages listed for it, each declared in package.json
// "dependencies"; createRequire (a way around both) only where recorded below, with why.
// Test code has rules of its own (checkTests below): shared fixtures live in test/harness, which
// reaches src only through each unit's index.ts (or a recorded lean entry), src never reaches
// test/**, and a fixture is never named *.test.ts (it would run as an empty test file).

import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { parseProgramFlags } from "../src/cli/command.ts";

parseProgramFlags(
  "check-imports",
  "npm run check:imports",
  {},
  "Checks the import rules: layers point one way, folders are reached through their index.ts, npm packages per layer, no cycles, test fixtures in test/harness.",
);

const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");
const TEST = join(ROOT, "test");
const HARNESS = join(TEST, "harness");

/** Which top-level src folders each folder may import (itself always allowed). */
const ALLOWED: Record<string, readonly string[]> = {
  base: [],
  api: ["base"],
  csi: ["base"],
  kube: ["base", "api", "csi"],
  apiserver: ["base", "api"],
  migration: ["base", "api"],
  controllers: ["base", "api", "csi", "kube", "migration"],
  node: ["base", "api", "csi", "kube", "migration"],
  sidecars: ["base", "api", "csi", "kube", "migration"],
  drivers: ["base", "csi"],
  sanity: ["base", "csi"],
  // `csikit fault-proxy`: forwards CSI calls at the HTTP/2 level (node:http2), csi for statuses.
  faultproxy: ["base", "csi"],
  // `csikit doctor`: reads the API and a driver's listing (migration: in-tree PVs name volumes too), repairs through both.
  doctor: ["base", "api", "csi", "kube", "migration"],
  // `csikit why`: reads a cluster through kube's client and judges it; no component imports it.
  why: ["base", "api", "kube"],
  // `csikit e2e`: storage e2e suites through the API (kube), starting `csikit up` as a child (cluster's layout and poll).
  e2e: ["base", "api", "kube", "csi", "cluster"],
  // `csikit dashboard` and up's dashboard: watches through kube's client, why's read-only
  // explanation of a stuck claim; never the components' memory.
  dashboard: ["base", "api", "kube", "why"],
  cluster: [
    "base",
    "api",
    "csi",
    "kube",
    "apiserver",
    "migration",
    "controllers",
    "node",
    "sidecars",
    "drivers",
    "faultproxy",
    "dashboard",
  ],
  cli: [
    "base",
    "api",
    "csi",
    "kube",
    "apiserver",
    "migration",
    "controllers",
    "node",
    "sidecars",
    "drivers",
    "sanity",
    "cluster",
    "faultproxy",
    "doctor",
    "why",
    "e2e",
    "dashboard",
  ],
};

/** npm packages each top-level folder may import (node: builtins are always allowed). */
const PACKAGES: Record<string, readonly string[]> = {
  csi: ["@grpc/grpc-js", "@grpc/proto-loader", "protobufjs"],
  // Not @kubernetes/client-node: every component imports kube, and client-node costs ~0.65 s CPU.
  // @peculiar/x509 and reflect-metadata: loaded lazily by serving-cert.ts, only for a secure port
  // started without a certificate of its own.
  // ws: exec.ts's pods/exec client, loaded on its first call only.
  kube: ["prom-client", "yaml", "@peculiar/x509", "reflect-metadata", "ws"],
  apiserver: [
    "@kubernetes/client-node",
    "@marcbachmann/cel-js",
    "@peculiar/x509",
    // The Kubernetes protobuf wire format (protobuf.ts), built from the generated descriptor.
    "protobufjs",
    "re2js",
    "reflect-metadata",
    "yaml",
  ],
  sanity: ["yaml"],
  // `csikit e2e --test-driver` reads upstream's test-driver YAML.
  e2e: ["yaml"],
  // `csikit migrate` reads and writes multi-document manifests.
  cli: ["yaml"],
  // deploy/rbac/*.yaml and the components' kubeconfigs.
  cluster: ["yaml"],
  // Components register their own metrics (kubelet_volume_stats_*, csistoragecapacities_*).
  controllers: ["prom-client"],
  // ws: the kubelet's /exec over WebSocket (loaded on the first exec, node/streaming/ws-channels.ts).
  node: ["prom-client", "ws"],
  sidecars: ["prom-client"],
};

/** Modules allowed to call createRequire, and why (everything else is refused). */
const CREATE_REQUIRE: Record<string, string> = {
  "csi/proto-fingerprint.ts":
    "locates protobufjs's bundled google/protobuf descriptors on disk (used by scripts/spec-fingerprint.ts only)",
  "kube/prom.ts":
    "loads prom-client's metric classes and default collectors from its lib/ files, not its index: the index pulls in @opentelemetry/api, about 9 MiB of RSS per process",
  "apiserver/resources/builtin-docs.ts":
    "reads @kubernetes/client-node's generated model files for upstream field descriptions: a deliberate reach into that package's internals, to be replaced by a vendored copy of the descriptions",
};

const DECLARED = new Set(
  Object.keys(
    (JSON.parse(readFileSync(resolve(SRC, "..", "package.json"), "utf8")) as { dependencies?: object })
      .dependencies ?? {},
  ),
);

/** Test code may also use devDependencies (playwright-core drives the dashboard's browser tests). */
const DEV_DECLARED = new Set(
  Object.keys(
    (JSON.parse(readFileSync(resolve(SRC, "..", "package.json"), "utf8")) as { devDependencies?: object })
      .devDependencies ?? {},
  ),
);

/** The package a bare specifier names: "@scope/name" or "name". */
function packageOf(spec: string): string {
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/**
 * Second entry points besides index.ts, and why: a unit whose index.ts loads something heavy
 * may offer a lean subset for processes that do not need it.
 */
const EXTRA_ENTRIES: Record<string, string> = {
  kube: "diagnostics.ts", // flags, metrics, HTTP endpoint, pprof without @kubernetes/client-node
};

/** Sub-folders that are components of their own: siblings reach each other through index.ts too. */
const COMPONENT_PARENTS = new Set(["controllers", "sidecars", "drivers", "node"]);

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

function importsOf(source: string): string[] {
  const specs: string[] = [];
  const pattern =
    /(?:^|[\s;])(?:import|export)\s(?:[^"';]*?\sfrom\s)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm;
  for (const match of source.matchAll(pattern)) specs.push((match[1] ?? match[2])!);
  return specs;
}

/** The unit a file belongs to: "csi", or "sidecars/provisioner" for component folders. */
function unitOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  const top = parts[0]!;
  if (COMPONENT_PARENTS.has(top) && parts.length > 2) return `${top}/${parts[1]}`;
  return top;
}

const problems: string[] = [];
const graph = new Map<string, string[]>();
const files = walk(SRC).filter((f) => !f.endsWith(".test.ts"));
for (const file of files) {
  const fromUnit = unitOf(file);
  const fromTop = fromUnit.split("/")[0]!;
  const edges: string[] = [];
  const source = readFileSync(file, "utf8");
  const name = relative(SRC, file).split(sep).join("/");
  if (/\bcreateRequire\(/.test(source) && !(name in CREATE_REQUIRE))
    problems.push(`${name}: createRequire is not allowed here (record it in CREATE_REQUIRE with why)`);
  for (const spec of importsOf(source)) {
    if (spec.startsWith("node:")) continue;
    if (!spec.startsWith(".")) {
      const pkg = packageOf(spec);
      if (!DECLARED.has(pkg)) problems.push(`${name}: imports ${pkg}, which package.json does not declare`);
      else if (!(PACKAGES[fromTop] ?? []).includes(pkg))
        problems.push(`${name}: layer ${fromTop} may not import the npm package ${pkg}`);
      continue;
    }
    const target = resolve(dirname(file), spec);
    const rel = relative(SRC, target);
    if (rel.startsWith("..")) {
      if (target.startsWith(TEST + sep))
        problems.push(`${relative(SRC, file)}: product code may not import test code (${spec})`);
      else if (!/package\.json$/.test(rel))
        problems.push(`${relative(SRC, file)}: imports outside src: ${spec}`);
      continue;
    }
    edges.push(target);
    const toUnit = unitOf(target);
    const toTop = toUnit.split("/")[0]!;
    if (toUnit === fromUnit) continue;
    if (toTop !== fromTop && !(ALLOWED[fromTop] ?? []).includes(toTop)) {
      problems.push(`${relative(SRC, file)}: layer ${fromTop} may not import ${toTop} (${spec})`);
    }
    const unitRoot = join(SRC, ...toUnit.split("/"));
    const extra = EXTRA_ENTRIES[toUnit];
    if (target !== join(unitRoot, "index.ts") && (extra === undefined || target !== join(unitRoot, extra))) {
      problems.push(`${relative(SRC, file)}: import ${toUnit} through its index.ts, not ${spec}`);
    }
  }
  graph.set(file, edges);
}

/** Whether target is a unit's index.ts or one of its recorded lean entries. */
function isEntry(target: string): boolean {
  const unit = unitOf(target);
  const unitRoot = join(SRC, ...unit.split("/"));
  const extra = EXTRA_ENTRIES[unit];
  return target === join(unitRoot, "index.ts") || (extra !== undefined && target === join(unitRoot, extra));
}

/** A test file that registers no test: node --test runs it as an empty file. */
function registersTests(source: string): boolean {
  return /\b(?:test|it|describe|suite)(?:\.\w+)?\(/.test(source);
}

// Test code: the harness, the test files anywhere, and what each of them imports.
function checkTests(): number {
  const testFiles = [...walk(SRC), ...walk(TEST)].filter((f) => f.endsWith(".test.ts"));
  const harness = walk(HARNESS);
  for (const file of walk(TEST)) {
    const name = relative(ROOT, file);
    if (file.startsWith(HARNESS + sep) && file.endsWith(".test.ts"))
      problems.push(
        `${name}: a harness module must not be named *.test.ts (it would run as an empty test file)`,
      );
    else if (!file.startsWith(HARNESS + sep) && !file.endsWith(".test.ts"))
      problems.push(`${name}: shared test code belongs in test/harness`);
  }
  for (const file of [...testFiles, ...harness]) {
    const name = relative(ROOT, file);
    const source = readFileSync(file, "utf8");
    const isHarness = file.startsWith(HARNESS + sep);
    if (!isHarness && !registersTests(source))
      problems.push(`${name}: registers no test (a fixture named *.test.ts? move it to test/harness)`);
    for (const spec of importsOf(source)) {
      if (spec.startsWith("node:")) continue;
      if (!spec.startsWith(".")) {
        if (!DECLARED.has(packageOf(spec)) && !DEV_DECLARED.has(packageOf(spec)))
          problems.push(`${name}: imports ${spec}, which package.json does not declare`);
        continue;
      }
      const target = resolve(dirname(file), spec);
      if (target.endsWith(".test.ts"))
        problems.push(`${name}: imports the test file ${spec} (shared fixtures belong in test/harness)`);
      else if (isHarness && target.startsWith(SRC + sep) && !isEntry(target))
        problems.push(`${name}: the harness imports src through each unit's index.ts, not ${spec}`);
      else if (isHarness && !target.startsWith(SRC + sep) && !target.startsWith(HARNESS + sep))
        problems.push(`${name}: the harness may import only src and test/harness, not ${spec}`);
    }
  }
  return testFiles.length + harness.length;
}
const testModules = checkTests();

// Cycle check: depth-first search with colours.
const colour = new Map<string, 1 | 2>();
const stack: string[] = [];
function visit(node: string): void {
  colour.set(node, 1);
  stack.push(node);
  for (const next of graph.get(node) ?? []) {
    const c = colour.get(next);
    if (c === 1) {
      const cycle = stack
        .slice(stack.indexOf(next))
        .concat(next)
        .map((f) => relative(SRC, f));
      problems.push(`import cycle: ${cycle.join(" -> ")}`);
    } else if (c === undefined && graph.has(next)) visit(next);
  }
  stack.pop();
  colour.set(node, 2);
}
for (const file of graph.keys()) if (!colour.has(file)) visit(file);

if (problems.length > 0) {
  for (const p of problems) process.stderr.write(p + "\n");
  process.stderr.write(`check-imports: ${problems.length} problem(s)\n`);
  process.exit(1);
}
process.stdout.write(
  `check-imports: ${files.length} modules, layers and cycles ok; ${testModules} test and harness modules ok\n`,
);
