// Tests of `csikit csi` against a real `csikit hostpath` process on a real Unix socket: every RPC
// of the table (a test at the end checks none was left out), the output formats, streamed
// responses, bad input refused naming what is wrong, and secrets never printed. RPCs run
// in-process through runCsi (the command's whole path after runCommand) to keep the suite fast;
// --help and exit codes run as child processes, as a user does.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { open, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import { parse as parseYaml } from "yaml";
import { memoryLogger, parseFlags, silentLogger, type Logger } from "../base/index.ts";
import { IS_ROOT, MAIN, startHostpathProcess } from "../../test/harness/csikit-process.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";
import { subtests } from "../../test/harness/subtests.ts";
import { CSI_TOP_FLAGS, runCsi } from "./csi.ts";
import { RPCS, methodSpec } from "./csi-rpcs.ts";

const { subtest, runAll } = subtests();

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function sink(): { stream: Writable; text: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

let endpoint = "";
let stateDir = "";
const covered = new Set<string>();

/** Runs `csikit csi ...args` against the shared driver; records the RPC as covered when it succeeds. */
async function csi(args: readonly string[], logger: Logger = silentLogger): Promise<Result> {
  const out = sink();
  const err = sink();
  const before = parseFlags(CSI_TOP_FLAGS, [`--endpoint=${endpoint}`, ...args]);
  const code = await runCsi(before, {
    stdout: out.stream,
    stderr: err.stream,
    logger,
    signal: new AbortController().signal,
  });
  return { code, stdout: out.text(), stderr: err.text() };
}

/** Runs an RPC that must succeed and returns its JSON response; marks it covered. */
async function ok(rpc: string, args: readonly string[] = []): Promise<Record<string, unknown>> {
  const result = await csi([...rpc.split(" "), ...args, "-o", "json"]);
  assert.equal(result.code, 0, `${rpc}: ${result.stderr}`);
  covered.add(rpc);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

function field(message: Record<string, unknown>, path: string): string {
  let value: unknown = message;
  for (const key of path.split(".")) value = (value as Record<string, unknown>)[key];
  assert.equal(typeof value, "string", `${path} in ${JSON.stringify(message)}`);
  return value as string;
}

function child(args: readonly string[]): Promise<Result> {
  const proc = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    proc.on("error", reject);
    proc.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

// One driver for the file, with every optional service on (snapshot metadata, modify, GetSnapshot).
subtest("identity RPCs", async () => {
  assert.equal(field(await ok("identity plugin-info"), "name"), "hostpath.csi.k8s.io");
  const capabilities = await ok("identity plugin-capabilities");
  assert.ok(JSON.stringify(capabilities).includes("CONTROLLER_SERVICE"));
  assert.deepEqual(await ok("identity probe"), { ready: { value: true } });
});

subtest("controller, snapshot and group snapshot RPCs through a volume's life", async () => {
  const created = await ok("controller create-volume", [
    "csi-test-vol",
    "--cap",
    "SINGLE_NODE_WRITER,mount,ext4",
    "--req-bytes",
    "1Mi",
    "--params",
    "kind=",
  ]);
  const volumeId = field(created, "volume.volumeId");
  assert.equal(field(created, "volume.capacityBytes"), "1048576");
  // Idempotent as CreateVolume must be: the same name gives the same volume.
  assert.equal(
    field(
      await ok("controller create-volume", [
        "csi-test-vol",
        "--cap",
        "SINGLE_NODE_WRITER,mount,ext4",
        "--req-bytes",
        "1Mi",
        "--params",
        "kind=",
      ]),
      "volume.volumeId",
    ),
    volumeId,
  );

  const listed = await ok("controller list-volumes", ["--max-entries", "10"]);
  assert.ok(JSON.stringify(listed).includes(volumeId));
  assert.equal(field(await ok("controller get-volume", [volumeId]), "volume.volumeId"), volumeId);
  const validated = await ok("controller validate-volume-capabilities", [
    volumeId,
    "--cap",
    "SINGLE_NODE_WRITER,mount",
  ]);
  assert.ok(validated.confirmed, JSON.stringify(validated));
  assert.match(
    field(await ok("controller get-capacity", ["--cap", "SINGLE_NODE_WRITER,mount"]), "availableCapacity"),
    /^\d+$/,
  );
  assert.ok(JSON.stringify(await ok("controller get-capabilities")).includes("CREATE_DELETE_VOLUME"));
  await ok("controller publish", [volumeId, "--node-id", "csi-node", "--cap", "SINGLE_NODE_WRITER,mount"]);
  const expanded = await ok("controller expand-volume", [volumeId, "--req-bytes", "2Mi"]);
  assert.equal(field(expanded, "capacityBytes"), "2097152");
  assert.deepEqual(await ok("controller modify-volume", [volumeId, "--mutable-params", "iops=100"]), {});

  const snapshot = await ok("controller create-snapshot", ["csi-test-snap", "--source-volume", volumeId]);
  const snapshotId = field(snapshot, "snapshot.snapshotId");
  assert.ok(
    JSON.stringify(await ok("controller list-snapshots", ["--source-volume", volumeId])).includes(snapshotId),
  );
  assert.equal(field(await ok("controller get-snapshot", [snapshotId]), "snapshot.snapshotId"), snapshotId);

  assert.ok(
    JSON.stringify(await ok("group-controller get-capabilities")).includes(
      "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT",
    ),
  );
  const group = await ok("group-controller create-group-snapshot", [
    "csi-test-group",
    "--source-volume",
    volumeId,
  ]);
  const groupId = field(group, "groupSnapshot.groupSnapshotId");
  const members = (group.groupSnapshot as { snapshots: { snapshotId: string }[] }).snapshots.map(
    (s) => s.snapshotId,
  );
  assert.equal(members.length, 1);
  const got = await ok("group-controller get-group-snapshot", [groupId, "--snapshot-id", members.join(",")]);
  assert.equal(field(got, "groupSnapshot.groupSnapshotId"), groupId);
  await ok("group-controller delete-group-snapshot", [groupId, "--snapshot-id", members.join(",")]);

  await ok("controller delete-snapshot", [snapshotId]);
  await ok("controller unpublish", [volumeId, "--node-id", "csi-node"]);
  await ok("controller delete-volume", [volumeId]);
  const after = await csi(["controller", "get-volume", volumeId]);
  assert.equal(after.code, 1);
  assert.match(after.stderr, /ControllerGetVolume failed: NOT_FOUND/);
});

subtest(
  "node RPCs with real mounts",
  { skip: IS_ROOT ? false : "needs root to mount (hostpath's NodeStage/NodePublish bind-mount)" },
  async (t) => {
    assert.equal(field(await ok("node get-info"), "nodeId"), "csi-node");
    assert.ok(JSON.stringify(await ok("node get-capabilities")).includes("STAGE_UNSTAGE_VOLUME"));
    const created = await ok("controller create-volume", [
      "csi-test-node-vol",
      "--cap",
      "SINGLE_NODE_WRITER,mount",
      "--req-bytes",
      "1Mi",
    ]);
    const volumeId = field(created, "volume.volumeId");
    const dir = join(stateDir, "..");
    const staging = join(dir, "staging");
    const target = join(dir, "target");
    defer(t, () => csi(["controller", "delete-volume", volumeId]));
    await ok("node stage", [volumeId, "--staging-target-path", staging, "--cap", "SINGLE_NODE_WRITER,mount"]);
    await ok("node publish", [
      volumeId,
      "--staging-target-path",
      staging,
      "--target-path",
      target,
      "--cap",
      "SINGLE_NODE_WRITER,mount",
    ]);
    const stats = await ok("node stats", [volumeId, "--volume-path", target]);
    assert.ok(JSON.stringify(stats).includes('"unit":"BYTES"'), JSON.stringify(stats));
    await ok("controller expand-volume", [volumeId, "--req-bytes", "2Mi"]);
    assert.equal(
      field(
        await ok("node expand", [volumeId, "--volume-path", target, "--req-bytes", "2Mi"]),
        "capacityBytes",
      ),
      "2097152",
    );
    await ok("node unpublish", [volumeId, "--target-path", target]);
    await ok("node unstage", [volumeId, "--staging-target-path", staging]);
  },
);

subtest("snapshot metadata streams print each message as it arrives", async (t) => {
  const created = await ok("controller create-volume", [
    "csi-test-block",
    "--cap",
    "SINGLE_NODE_WRITER,block",
    "--req-bytes",
    "1Mi",
  ]);
  const volumeId = field(created, "volume.volumeId");
  defer(t, () => csi(["controller", "delete-volume", volumeId]));
  const base = field(
    await ok("controller create-snapshot", ["csi-test-base", "--source-volume", volumeId]),
    "snapshot.snapshotId",
  );
  defer(t, () => csi(["controller", "delete-snapshot", base]));
  // Two 4 KiB blocks written into the volume's backing file, as a writer through the block device would.
  const image = (await readdir(join(stateDir, "volumes"))).find((name) => name.startsWith(volumeId));
  assert.ok(image, "the block volume's backing file");
  const handle = await open(join(stateDir, "volumes", image), "r+");
  await handle.write(Buffer.alloc(8192, 7), 0, 8192, 12288);
  await handle.close();
  const target = field(
    await ok("controller create-snapshot", ["csi-test-target", "--source-volume", volumeId]),
    "snapshot.snapshotId",
  );
  defer(t, () => csi(["controller", "delete-snapshot", target]));

  // -o json: one object per streamed message; --max-results 1 makes one message per block.
  const allocated = await csi(["snapshot-metadata", "allocated", target, "--max-results", "1", "-o", "json"]);
  assert.equal(allocated.code, 0, allocated.stderr);
  const messages = allocated.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { blockMetadata: { byteOffset: string }[] });
  assert.deepEqual(
    messages.map((m) => m.blockMetadata.map((b) => b.byteOffset)),
    [["12288"], ["16384"]],
  );
  covered.add("snapshot-metadata allocated");

  const delta = await csi(["snapshot-metadata", "delta", base, target, "-o", "yaml"]);
  assert.equal(delta.code, 0, delta.stderr);
  const documents = delta.stdout
    .split(/^---$/m)
    .filter((doc) => doc.trim() !== "")
    .map((doc) => parseYaml(doc) as { blockMetadata: unknown[] });
  assert.equal(documents.flatMap((doc) => doc.blockMetadata).length, 2);
  covered.add("snapshot-metadata delta");

  const table = await csi(["GetMetadataAllocated", target, "-o", "table"]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^BYTEOFFSET\s+SIZEBYTES\n12288\s+4096\n16384\s+4096\n/);
});

subtest("output formats: yaml by default, json, table", async () => {
  const yaml = await csi(["identity", "plugin-info"]);
  assert.equal((parseYaml(yaml.stdout) as { name: string }).name, "hostpath.csi.k8s.io");
  const table = await csi(["node", "get-info", "-o", "table"]);
  assert.match(table.stdout, /^FIELD\s+VALUE\nnodeId\s+csi-node\n/);
  assert.match(table.stdout, /accessibleTopology\.segments\s+topology\.hostpath\.csi\/node=csi-node/);
  const caps = await csi(["controller", "get-capabilities", "--output=table"]);
  assert.match(caps.stdout, /^RPC\.TYPE\s+TYPE\nCREATE_DELETE_VOLUME\s+rpc\n/);
  const bad = await csi(["identity", "probe", "-o", "xml"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /invalid value "xml" for flag -output: want yaml, json, table/);
});

subtest("--json takes any request field; typed flags and arguments win", async (t) => {
  const dir = await tempDir(t, "csikit-csi-json-");
  const file = join(dir, "request.json");
  await writeFile(
    file,
    JSON.stringify({
      name: "from-file",
      volume_capabilities: [{ mount: { fs_type: "ext4" }, access_mode: { mode: "SINGLE_NODE_WRITER" } }],
      capacity_range: { required_bytes: 1048576 },
      parameters: { kind: "" },
    }),
  );
  const fromFile = await ok("controller create-volume", ["--json", `@${file}`]);
  const fromFileId = field(fromFile, "volume.volumeId");
  defer(t, () => csi(["controller", "delete-volume", fromFileId]));
  const overridden = await ok("controller create-volume", [
    "json-override",
    "--json",
    `@${file}`,
    "--req-bytes",
    "2Mi",
  ]);
  defer(t, () => csi(["controller", "delete-volume", field(overridden, "volume.volumeId")]));
  assert.notEqual(field(overridden, "volume.volumeId"), fromFileId);
  assert.equal(field(overridden, "volume.capacityBytes"), "2097152");
});

subtest("bad input is refused before dialling, naming what is wrong", async () => {
  const cases: [string[], RegExp][] = [
    [["controller", "frobnicate"], /unknown RPC "controller frobnicate" \(csikit csi --help lists them\)/],
    [
      ["controller", "create-volume"],
      /CreateVolume needs name \(usage: csikit csi controller create-volume NAME \[flags\]\)/,
    ],
    [["controller", "delete-volume", "a", "b"], /takes volumeId; unexpected "b"/],
    [
      ["controller", "create-volume", "v", "--json", '{"name": "x",}'],
      /flag -json: malformed JSON: .* at position 13 \(line 1 column 14\)/,
    ],
    [
      ["controller", "create-volume", "v", "--json", '{"capacity_rang": {}}'],
      /--json\.capacity_rang: no such field in csi\.v1\.CreateVolumeRequest \(fields: name, capacityRange, /,
    ],
    [
      ["controller", "create-volume", "v", "--json", '{"capacityRange": {"requiredBytes": "1Gi"}}'],
      /--json\.capacityRange\.requiredBytes: want an integer \(int64\), got string "1Gi"/,
    ],
    [
      ["controller", "create-volume", "v", "--json", "[]"],
      /--json: want an object \(csi\.v1\.CreateVolumeRequest\), got a list/,
    ],
    [
      ["controller", "create-volume", "v", "--cap", "EVERYONE,mount"],
      /request\.volumeCapabilities\[0\]\.accessMode\.mode: string "EVERYONE" is not a csi\.v1\.VolumeCapability\.AccessMode\.Mode \(one of UNKNOWN, SINGLE_NODE_WRITER/,
    ],
    [
      ["controller", "create-volume", "v", "--cap", "SINGLE_NODE_WRITER,tape"],
      /access type "tape" is neither mount nor block/,
    ],
    [
      ["controller", "create-volume", "v", "--req-bytes", "lots"],
      /flag -req-bytes: "lots" is not a byte quantity/,
    ],
    [
      ["node", "publish", "v", "--cap", "1,mount", "--cap", "1,block"],
      /flag -cap: 2 given, this RPC takes one volume capability/,
    ],
    [["identity", "probe", "--cap", "1,mount"], /Probe takes no -cap/],
    [["identity", "probe", "--node-id", "x"], /flag provided but not defined: -node-id/],
    [["node", "unstage", "v", "--secrets-file", "/nonexistent"], /NodeUnstageVolume takes no secrets/],
  ];
  for (const [args, message] of cases) {
    const result = await csi(args);
    assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, message, args.join(" "));
    assert.equal(result.stdout, "");
  }
  const out = sink();
  const err = sink();
  const code = await runCsi(
    parseFlags(CSI_TOP_FLAGS, ["--endpoint=tcp://127.0.0.1:9", "identity", "probe"]),
    {
      stdout: out.stream,
      stderr: err.stream,
      logger: silentLogger,
      signal: new AbortController().signal,
    },
  );
  assert.equal(code, 2);
  assert.match(
    err.text(),
    /flag -endpoint: CSI endpoint "tcp:\/\/127\.0\.0\.1:9" is not supported: CSI runs over Unix domain sockets/,
  );
});

subtest("secrets from a file reach the driver and are never printed", async (t) => {
  const dir = await tempDir(t, "csikit-csi-secrets-");
  const secretValue = "s3cr3t-do-not-print";
  const secrets = join(dir, "secrets.yaml");
  await writeFile(secrets, `password: ${secretValue}\nuser: admin\n`, { mode: 0o600 });
  // -v 5 traces every request: the client's sanitizer must strip the secrets from them.
  const { logger, lines } = memoryLogger({ verbosity: 5 });
  const created = await csi(
    [
      "controller",
      "create-volume",
      "csi-test-secret",
      "--cap",
      "SINGLE_NODE_WRITER,mount",
      "--secrets-file",
      secrets,
      "-o",
      "yaml",
    ],
    logger,
  );
  assert.equal(created.code, 0, created.stderr);
  const volumeId = (parseYaml(created.stdout) as { volume: { volumeId: string } }).volume.volumeId;
  defer(t, () => csi(["controller", "delete-volume", volumeId]));
  assert.ok(
    lines.some((line) => line.includes("CreateVolume") && line.includes("***stripped***")),
    lines.join("\n"),
  );
  for (const text of [created.stdout, created.stderr, ...lines]) assert.ok(!text.includes(secretValue), text);

  // A broken secrets file is named, its content is not.
  const broken = join(dir, "broken.yaml");
  await writeFile(broken, `password: [${secretValue}\n`, { mode: 0o600 });
  const refused = await csi(["controller", "delete-volume", volumeId, "--secrets-file", broken]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /flag -secrets-file: .*broken\.yaml is not valid YAML or JSON/);
  assert.ok(!refused.stderr.includes(secretValue));
  const nested = join(dir, "nested.yaml");
  await writeFile(nested, `password: {value: ${secretValue}}\n`, { mode: 0o600 });
  const notString = await csi(["controller", "delete-volume", volumeId, "--secrets-file", nested]);
  assert.match(notString.stderr, /the value of "password" is not a string/);
  assert.ok(!notString.stderr.includes(secretValue));
  // Secrets given in --json with a syntax error: the error names the position only.
  const json = await csi([
    "controller",
    "delete-volume",
    volumeId,
    "--json",
    `{"secrets": {"p": "${secretValue}"`,
  ]);
  assert.equal(json.code, 2);
  assert.ok(!json.stderr.includes(secretValue), json.stderr);
});

subtest("csikit csi --help lists every RPC; a failed RPC exits 1 with its code", async () => {
  const help = await child(["csi", "--help"]);
  assert.equal(help.code, 0, help.stderr);
  for (const command of RPCS) {
    assert.match(
      help.stdout,
      new RegExp(`\\b${command.name}\\b.*\\b${methodSpec(command).name}\\b`),
      methodSpec(command).name,
    );
  }
  const rpcHelp = await child(["csi", "controller", "create-volume", "--help"]);
  assert.equal(rpcHelp.code, 0);
  assert.match(rpcHelp.stdout, /^Usage: csikit csi controller create-volume NAME \[flags\]/);
  assert.match(
    rpcHelp.stdout,
    /--req-bytes string\n\s+Required capacity .*\(CreateVolumeRequest\.capacityRange\.requiredBytes\)/,
  );
  const failed = await child(["csi", "controller", "delete-snapshot", "", `--endpoint=${endpoint}`]);
  assert.equal(failed.code, 2, failed.stderr);
  const missing = await child(["csi", "controller", "get-snapshot", "snap-none", `--endpoint=${endpoint}`]);
  assert.equal(missing.code, 1, missing.stderr);
  assert.match(missing.stderr, /^csikit csi: GetSnapshot failed: NOT_FOUND: /);
});

subtest("every RPC in the table was called successfully above", () => {
  const expected = RPCS.map((command) => `${command.group} ${command.name}`);
  const nodeMounts = [
    "node get-info",
    "node get-capabilities",
    "node stage",
    "node publish",
    "node stats",
    "node expand",
    "node unpublish",
    "node unstage",
  ];
  const missing = expected.filter((name) => !covered.has(name) && (IS_ROOT || !nodeMounts.includes(name)));
  assert.deepEqual(missing, []);
});

test("csikit csi against a real csikit hostpath process", async (t) => {
  const dir = await tempDir(t, "csikit-csi-");
  stateDir = join(dir, "state");
  // Every optional service on: snapshot metadata, ControllerModifyVolume, GetSnapshot.
  const driver = await startHostpathProcess(t, dir, [
    "--enable-snapshot-metadata",
    "--enable-controller-modify-volume",
    "--enable-alpha-capabilities",
  ]);
  endpoint = `unix://${driver.socket}`;
  await runAll(t);
});
