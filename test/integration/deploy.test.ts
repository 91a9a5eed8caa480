// deploy/ checked without a cluster or a container engine (neither exists on these machines):
// (a) `kubectl apply --validate=strict` of everything under deploy/ (recursively, so
//     deploy/rbac/ is covered) to the embedded API server succeeds, twice, and every object
//     reads back with what the manifest says. Validation is the server's (kubectl sends
//     fieldValidation=Strict; a misspelt field is refused, checked below). Server-side *apply*
//     (`--server-side`) the csikit API server does not implement, and says so. Pod templates use
//     only ServiceAccounts the manifests declare, and every binding's role is defined in deploy/;
// (b) every container command line (`command: [csikit, <subcommand>]` + `args`, with the
//     kubelet's $(VAR) expansion) is accepted by csikit's own flag parser and option
//     validation for that subcommand;
// (c) the files the image copies (deploy/Dockerfile COPY lines minus Dockerfile.dockerignore)
//     are enough to load every subcommand.

import { attacherOptionsFromFlags } from "../../src/sidecars/attacher/index.ts";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdtemp, readdir, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, before, describe, test } from "node:test";
import { parseAllDocuments } from "yaml";
import { startTestServer, type TestServer } from "../harness/apiserver.ts";
import { Flags, LOGGING_FLAGS, parseFlags, silentLogger } from "../../src/base/index.ts";
import { sidecarsOptionsFromFlags } from "../../src/cli/sidecars.ts";
import { nodeSidecarRuns } from "../../src/cli/node-sidecars.ts";
import { commands } from "../../src/cli/commands.ts";
import { hostpathOptions } from "../../src/cli/hostpath.ts";
import { livenessProbeOptionsFromFlags } from "../../src/sidecars/livenessprobe/index.ts";
import { provisionerOptionsFromFlags } from "../../src/sidecars/provisioner/index.ts";
import { registrarOptionsFromFlags } from "../../src/sidecars/registrar/index.ts";
import { resizerOptionsFromFlags } from "../../src/sidecars/resizer/index.ts";
import { healthMonitorOptionsFromFlags } from "../../src/sidecars/health-monitor/index.ts";
import { snapshotMetadataOptionsFromFlags } from "../../src/sidecars/snapshot-metadata/index.ts";
import { snapshotterOptionsFromFlags } from "../../src/sidecars/snapshotter/index.ts";
import { snapshotControllerOptionsFromFlags } from "../../src/controllers/index.ts";
import { kubectl, kubectlMissing } from "../harness/kubectl.ts";
import { until } from "../harness/until.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const DEPLOY = join(ROOT, "deploy");

/**
 * Subcommands the manifests use that are built on a sibling branch and not registered here
 * yet (none since `csikit attacher` was merged).
 */
const NOT_YET_REGISTERED = new Set<string>();

/** The option validation each subcommand's `run` does before starting: values, not just names. */
const VALIDATE: Record<string, (flags: Flags) => unknown> = {
  hostpath: hostpathOptions,
  provisioner: provisionerOptionsFromFlags,
  attacher: attacherOptionsFromFlags,
  registrar: registrarOptionsFromFlags,
  livenessprobe: livenessProbeOptionsFromFlags,
  resizer: resizerOptionsFromFlags,
  "health-monitor": healthMonitorOptionsFromFlags,
  "snapshot-metadata": (flags) => snapshotMetadataOptionsFromFlags(flags, {}),
  snapshotter: (flags) => snapshotterOptionsFromFlags(flags, {}),
  "snapshot-controller": snapshotControllerOptionsFromFlags,
  sidecars: (flags) => sidecarsOptionsFromFlags(flags, silentLogger),
  "node-sidecars": (flags) => nodeSidecarRuns(flags, silentLogger),
};

/** The fields of a manifest object these checks read. */
interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  roleRef?: { apiGroup: string; kind: string; name: string };
  spec?: { template?: { spec?: PodSpecFields } };
}

interface ContainerFields {
  name: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
}

interface PodSpecFields {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  containers: ContainerFields[];
  initContainers?: ContainerFields[];
}

interface Manifest {
  file: string;
  object: ManifestObject;
}

function isManifestObject(value: unknown): value is ManifestObject {
  if (typeof value !== "object" || value === null) return false;
  const { apiVersion, kind, metadata } = value as Record<string, unknown>;
  return (
    typeof apiVersion === "string" &&
    typeof kind === "string" &&
    typeof metadata === "object" &&
    metadata !== null &&
    typeof (metadata as Record<string, unknown>).name === "string"
  );
}

async function yamlFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await yamlFiles(path)));
    else if (/\.ya?ml$/.test(entry.name)) out.push(path);
  }
  return out.sort();
}

async function manifests(): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const file of await yamlFiles(DEPLOY)) {
    for (const doc of parseAllDocuments(await readFile(file, "utf8"))) {
      assert.deepEqual(doc.errors, [], `${file}: YAML errors`);
      const object: unknown = doc.toJS();
      if (object === null) continue;
      assert.ok(isManifestObject(object), `${file}: a document without apiVersion, kind or metadata.name`);
      out.push({ file: relative(ROOT, file), object });
    }
  }
  return out;
}

interface Container {
  where: string;
  command: string[];
  args: string[];
  env: { name: string; value?: string; valueFrom?: unknown }[];
}

function containersOf(list: Manifest[]): Container[] {
  const out: Container[] = [];
  for (const { file, object } of list) {
    const spec = object.spec?.template?.spec;
    if (!spec) continue;
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])])
      out.push({
        where: `${file} ${object.kind}/${object.metadata?.name} container ${c.name}`,
        command: c.command ?? [],
        args: c.args ?? [],
        env: c.env ?? [],
      });
  }
  return out;
}

/** The kubelet's $(VAR) expansion; a fieldRef stands for a value of the right shape. */
function expand(arg: string, env: Container["env"]): string {
  return arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => {
    const variable = env.find((e) => e.name === name);
    if (!variable) return whole;
    return variable.value ?? `sample-${name.toLowerCase().replaceAll("_", "-")}`;
  });
}

/** "namespace/name" of every object of `kind` in the manifests ("" namespace for cluster-scoped). */
function declared(list: Manifest[], kind: string): Set<string> {
  return new Set(
    list
      .filter((m) => m.object.kind === kind)
      .map((m) => `${m.object.metadata.namespace ?? ""}/${m.object.metadata.name}`),
  );
}

describe("deploy/ against the embedded API server", { skip: kubectlMissing() }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.dispose());

  test("kubectl apply --validate=strict -R -f deploy/ succeeds twice and every object reads back", async () => {
    const list = await manifests();
    assert.ok(
      list.some((m) => m.object.kind === "DaemonSet") && list.some((m) => m.object.kind === "Deployment"),
    );
    // CRDs first, as a user installs them: kubectl validates every object of one apply against
    // the schema the server had before it, so the snapshot classes need their CRDs served.
    const crds = await kubectl(["apply", "--validate=strict", "-f", join(DEPLOY, "crds")], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(crds.code, 0, `crds: ${crds.stderr}${crds.stdout}`);
    await until(
      async () =>
        (
          await kubectl(["get", "volumesnapshotclasses,volumegroupsnapshotclasses"], {
            kubeconfig: server.handle.kubeconfigPath,
          })
        ).code === 0,
      "snapshot class CRDs served",
    );
    for (let round = 1; round <= 2; round++) {
      const applied = await kubectl(["apply", "--validate=strict", "-R", "-f", DEPLOY], {
        kubeconfig: server.handle.kubeconfigPath,
      });
      assert.equal(applied.code, 0, `round ${round}: ${applied.stderr}${applied.stdout}`);
    }
    for (const { file, object } of list) {
      const [group] = String(object.apiVersion).split("/").reverse().slice(1);
      const resource = `${String(object.kind).toLowerCase()}${group ? `.${group}` : ""}`;
      const args = ["get", resource, object.metadata.name, "-o", "json"];
      if (object.metadata.namespace) args.push("-n", object.metadata.namespace);
      const got = await kubectl(args, { kubeconfig: server.handle.kubeconfigPath });
      assert.equal(got.code, 0, `${file} ${object.kind}/${object.metadata.name}: ${got.stderr}`);
      const read: unknown = JSON.parse(got.stdout);
      assert.ok(isManifestObject(read));
      assert.deepEqual(
        read.metadata.labels ?? {},
        object.metadata.labels ?? {},
        `${file} ${object.kind} labels`,
      );
      const containerLines = (o: ManifestObject) =>
        o.spec?.template?.spec?.containers.map((c) => [c.name, c.command, c.args]);
      assert.deepEqual(containerLines(read), containerLines(object), `${file} ${object.kind} containers`);
      if (object.roleRef) assert.deepEqual(read.roleRef, object.roleRef);
    }
  });

  test("the server validates: a misspelt field in a deploy/ manifest is refused, naming it", async () => {
    const daemonSet = await readFile(join(DEPLOY, "csi-hostpath-node.yaml"), "utf8");
    assert.ok(daemonSet.includes("mountPropagation: Bidirectional"));
    // A new name, so this is a create whatever the other tests applied before.
    const misspelt = daemonSet
      .replace("mountPropagation: Bidirectional", "mountPropogation: Bidirectional")
      .replace("name: csi-hostpath-node\n", "name: csi-hostpath-node-misspelt\n");
    const refused = await kubectl(["apply", "--validate=strict", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: misspelt,
    });
    assert.notEqual(refused.code, 0, refused.stdout);
    assert.match(
      refused.stderr,
      /Error from server \(BadRequest\).*strict decoding error: unknown field ".*mountPropogation"/,
    );
  });

  test("pods run as ServiceAccounts deploy/ declares, or mount no token", async () => {
    const list = await manifests();
    const accounts = declared(list, "ServiceAccount");
    for (const { file, object } of list) {
      const spec = object.spec?.template?.spec;
      if (!spec) continue;
      const name = spec.serviceAccountName ?? "default";
      if (name === "default")
        assert.equal(
          spec.automountServiceAccountToken,
          false,
          `${file}: a pod without its own ServiceAccount mounts no token`,
        );
      else
        assert.ok(
          accounts.has(`${object.metadata.namespace}/${name}`),
          `${file}: ServiceAccount ${name} is not declared in deploy/`,
        );
    }
  });

  test(
    "every role a binding in deploy/ refers to is defined in deploy/",
    {
      skip: existsSync(join(DEPLOY, "rbac"))
        ? false
        : "deploy/rbac/ (the sidecars' roles, from the `up` branch) is not here yet",
    },
    async () => {
      const list = await manifests();
      const clusterRoles = declared(list, "ClusterRole");
      const roles = declared(list, "Role");
      for (const { file, object } of list) {
        if (!object.roleRef) continue;
        const ref = object.roleRef as { kind: string; name: string };
        const found =
          ref.kind === "ClusterRole"
            ? clusterRoles.has(`/${ref.name}`)
            : roles.has(`${object.metadata.namespace}/${ref.name}`);
        assert.ok(
          found,
          `${file} ${object.kind}/${object.metadata.name}: ${ref.kind} ${ref.name} is not defined in deploy/`,
        );
      }
    },
  );
});

test("every container command line in deploy/ is accepted by csikit's parser and validation for its subcommand", async (t) => {
  const registered = new Map(commands.map((c) => [c.name, c]));
  for (const name of NOT_YET_REGISTERED)
    assert.ok(!registered.has(name), `csikit ${name} is registered now: remove it from NOT_YET_REGISTERED`);
  const containers = containersOf(await manifests());
  assert.ok(containers.length >= 6, `found ${containers.length} containers`);
  const checked: string[] = [];
  for (const container of containers) {
    const [binary, subcommand, ...rest] = container.command;
    assert.equal(binary, "csikit", `${container.where}: command must be [csikit, <subcommand>]`);
    assert.ok(subcommand, `${container.where}: no subcommand`);
    const entry = registered.get(subcommand);
    if (!entry) {
      assert.ok(
        NOT_YET_REGISTERED.has(subcommand),
        `${container.where}: csikit has no subcommand ${subcommand}`,
      );
      t.diagnostic(
        `${container.where}: csikit ${subcommand} is not registered on this branch yet; not checked`,
      );
      continue;
    }
    const command = await entry.load();
    const argv = [...rest, ...container.args].map((arg) => expand(arg, container.env));
    for (const arg of argv)
      assert.ok(!arg.includes("$("), `${container.where}: ${arg} names an undefined variable`);
    const flags = new Flags(parseFlags({ ...LOGGING_FLAGS, ...command.flags }, argv));
    assert.deepEqual(flags.parsed.positionals, [], `${container.where}: positional arguments`);
    const validate = VALIDATE[subcommand];
    assert.ok(
      validate,
      `${container.where}: add csikit ${subcommand}'s option function to VALIDATE in this test`,
    );
    validate(flags);
    checked.push(`${subcommand}@${container.where}`);
  }
  for (const sub of [
    "hostpath",
    "provisioner",
    "attacher",
    "registrar",
    "livenessprobe",
    "resizer",
    "snapshotter",
    "health-monitor",
  ])
    assert.ok(
      checked.some((c) => c.startsWith(`${sub}@`)),
      `no container runs csikit ${sub}`,
    );
});

test("the files deploy/Dockerfile copies (minus Dockerfile.dockerignore) load every subcommand", async (t) => {
  const dockerfile = await readFile(join(DEPLOY, "Dockerfile"), "utf8");
  const sources = [...dockerfile.matchAll(/^COPY\s+(?!--from)(.+)$/gm)].flatMap((m) =>
    m[1]!.trim().split(/\s+/).slice(0, -1),
  );
  assert.deepEqual([...new Set(sources)].sort(), ["bin", "package-lock.json", "package.json", "src"]);
  const ignore = (await readFile(join(DEPLOY, "Dockerfile.dockerignore"), "utf8"))
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const excluded = ignore.filter((p) => p !== "*" && !p.startsWith("!"));
  for (const pattern of excluded)
    assert.match(pattern, /^\*\*\/[^/]+\/?$/, `pattern ${pattern}: this test only models **/name`);
  const matchers = excluded.map(
    (p) => new RegExp(`^${p.slice(3).replace(/\/$/, "").replaceAll(".", "\\.").replaceAll("*", "[^/]*")}$`),
  );
  const stage = await mkdtemp(join(tmpdir(), "csikit-image-"));
  t.after(() => rm(stage, { recursive: true, force: true }));
  for (const source of new Set(sources))
    await cp(join(ROOT, source), join(stage, source), {
      recursive: true,
      filter: (from) => !matchers.some((m) => from.split("/").some((part) => m.test(part))),
    });
  // The image's node_modules comes from `npm ci --omit=dev`; scripts/check-imports.ts already
  // proves src/ imports only packages under "dependencies", so the full tree stands in for it.
  await symlink(join(ROOT, "node_modules"), join(stage, "node_modules"));
  const staged = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { commands } = await import(${JSON.stringify(join(stage, "src", "cli", "commands.ts"))});
       for (const entry of commands) await entry.load();
       process.stdout.write(commands.map((c) => c.name).join(" "));`,
    ],
    { encoding: "utf8", timeout: 120_000, cwd: stage },
  );
  assert.equal(staged.status, 0, staged.stderr);
  assert.equal(staged.stdout, commands.map((c) => c.name).join(" "));
  const help = spawnSync(process.execPath, [join(stage, "bin", "csikit.js"), "registrar", "--help"], {
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /--kubelet-registration-path/);
});
