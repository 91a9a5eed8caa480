import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, rm, writeFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { GrpcStatus, grpcCode, type CsiClient } from "../../csi/index.ts";
import { BLOCK_RW, MIB, MOUNT_RW, rejectsWith, startTestDriver } from "./test-helpers.ts";
import { HostpathConfig, RANDOM_ATTACH_LIMIT_MAX, TOPOLOGY_KEY_NODE } from "./driver.ts";
import type { HostpathServerOptions } from "./server.ts";

/** Everything a CO can learn about what is served: sorted capability lists or UNIMPLEMENTED. */
async function served(client: CsiClient): Promise<Record<string, string[] | "UNIMPLEMENTED">> {
  const listOr = async (call: () => Promise<string[]>): Promise<string[] | "UNIMPLEMENTED"> => {
    try {
      return (await call()).sort();
    } catch (error) {
      if (grpcCode(error) === GrpcStatus.UNIMPLEMENTED) return "UNIMPLEMENTED";
      throw error;
    }
  };
  return {
    plugin: await listOr(async () =>
      (await client.identity.getPluginCapabilities({})).capabilities.map((c) =>
        c.service ? `service:${c.service.type}` : `expansion:${c.volumeExpansion?.type ?? "?"}`,
      ),
    ),
    controller: await listOr(async () =>
      (await client.controller.controllerGetCapabilities({})).capabilities.map((c) => c.rpc?.type ?? "?"),
    ),
    node: await listOr(async () =>
      (await client.node.nodeGetCapabilities({})).capabilities.map((c) => c.rpc?.type ?? "?"),
    ),
    group: await listOr(async () =>
      (await client.groupController.groupControllerGetCapabilities({})).capabilities.map(
        (c) => c.rpc?.type ?? "?",
      ),
    ),
  };
}

const CONTROLLER_BASE = [
  "CLONE_VOLUME",
  "CREATE_DELETE_SNAPSHOT",
  "CREATE_DELETE_VOLUME",
  "EXPAND_VOLUME",
  "GET_CAPACITY",
  "GET_SNAPSHOT",
  "GET_VOLUME",
  "LIST_SNAPSHOTS",
  "LIST_VOLUMES",
  "LIST_VOLUMES_PUBLISHED_NODES",
  "MODIFY_VOLUME",
  "SINGLE_NODE_MULTI_WRITER",
  "VOLUME_CONDITION",
];
const CONTROLLER_ATTACH = ["PUBLISH_READONLY", "PUBLISH_UNPUBLISH_VOLUME"];
const NODE_ALL = [
  "EXPAND_VOLUME",
  "GET_VOLUME_STATS",
  "SINGLE_NODE_MULTI_WRITER",
  "STAGE_UNSTAGE_VOLUME",
  "VOLUME_CONDITION",
];
const GROUP_ALL = ["CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT"];
const PLUGIN_ALL = [
  "expansion:ONLINE",
  "service:CONTROLLER_SERVICE",
  "service:GROUP_CONTROLLER_SERVICE",
  "service:VOLUME_ACCESSIBILITY_CONSTRAINTS",
];

test("identity and capabilities describe exactly what is served", async (t) => {
  const { client } = await startTestDriver(t, { driverName: "test.csi.example", vendorVersion: "9.9.9" });
  const info = await client.identity.getPluginInfo({});
  assert.equal(info.name, "test.csi.example");
  assert.equal(info.vendorVersion, "9.9.9");
  assert.equal((await client.identity.probe({})).ready?.value, true);
  assert.deepEqual(await served(client), {
    plugin: PLUGIN_ALL,
    controller: [...CONTROLLER_BASE, ...CONTROLLER_ATTACH].sort(),
    node: NODE_ALL,
    group: GROUP_ALL,
  });
  const node = await client.node.nodeGetInfo({});
  assert.equal(node.nodeId, "node-1");
  assert.deepEqual(node.accessibleTopology?.segments, { [TOPOLOGY_KEY_NODE]: "node-1" });
});

test("each service flag changes exactly the capabilities and services it names", async (t) => {
  const cases: Array<[string, Partial<HostpathServerOptions>, Awaited<ReturnType<typeof served>>]> = [
    [
      "--enable-attach=false",
      { enableAttach: false },
      { plugin: PLUGIN_ALL, controller: CONTROLLER_BASE, node: NODE_ALL, group: GROUP_ALL },
    ],
    [
      "--enable-topology=false",
      { enableTopology: false },
      {
        plugin: PLUGIN_ALL.filter((c) => c !== "service:VOLUME_ACCESSIBILITY_CONSTRAINTS"),
        controller: [...CONTROLLER_BASE, ...CONTROLLER_ATTACH].sort(),
        node: NODE_ALL,
        group: GROUP_ALL,
      },
    ],
    [
      "--enable-list-snapshots=false",
      { enableListSnapshots: false },
      {
        plugin: PLUGIN_ALL,
        controller: [...CONTROLLER_BASE, ...CONTROLLER_ATTACH].filter((c) => c !== "LIST_SNAPSHOTS").sort(),
        node: NODE_ALL,
        group: GROUP_ALL,
      },
    ],
    [
      "--node-service=false",
      { nodeService: false },
      {
        plugin: PLUGIN_ALL,
        controller: [...CONTROLLER_BASE, ...CONTROLLER_ATTACH].sort(),
        node: "UNIMPLEMENTED",
        group: GROUP_ALL,
      },
    ],
    [
      "--controller-service=false",
      { controllerService: false },
      { plugin: [], controller: "UNIMPLEMENTED", node: NODE_ALL, group: "UNIMPLEMENTED" },
    ],
  ];
  for (const [flag, options, expected] of cases) {
    const driver = await startTestDriver(t, options);
    assert.deepEqual(await served(driver.client), expected, flag);
  }
  // Without attach, ControllerPublish itself is UNIMPLEMENTED, not just unlisted.
  const { client } = await startTestDriver(t, { enableAttach: false });
  const volumeId = (await client.controller.createVolume({ name: "v", volumeCapabilities: [MOUNT_RW] }))
    .volume!.volumeId;
  await rejectsWith(
    client.controller.controllerPublishVolume({ volumeId, nodeId: "node-1", volumeCapability: MOUNT_RW }),
    GrpcStatus.UNIMPLEMENTED,
  );
  const topologyOff = await startTestDriver(t, { enableTopology: false });
  assert.equal((await topologyOff.client.node.nodeGetInfo({})).accessibleTopology, null);
});

/** The alpha values of ControllerServiceCapability.RPC.Type, read from the CSI v1.12 proto we serve. */
async function alphaControllerCapabilities(): Promise<string[]> {
  const proto = await readFile(join(import.meta.dirname, "../../csi/proto/csi.proto"), "utf8");
  const start = proto.indexOf("message ControllerServiceCapability {");
  const body = proto.slice(start, proto.indexOf("Type type = 1;", start));
  return [...body.matchAll(/^\s*([A-Z_]+) = \d+ \[\(alpha_enum_value\) = true\];/gm)]
    .map((m) => m[1]!)
    .sort();
}

// Upstream hostpath v1.16.1 advertised these alpha controller capabilities, all known to
// csi-lib-utils long before 0.21; v1.18.0 (the release csikit matches) added GET_SNAPSHOT.
const UPSTREAM_V1_16_ALPHA = ["GET_VOLUME", "SINGLE_NODE_MULTI_WRITER", "VOLUME_CONDITION"];

test("alpha capabilities: every one by default, as upstream v1.18; --enable-alpha-capabilities=false keeps v1.16's", async (t) => {
  const alpha = await alphaControllerCapabilities();
  assert.ok(alpha.includes("GET_SNAPSHOT"), `proto alpha values: ${alpha.join(", ")}`);
  const plain = await startTestDriver(t);
  const all = (await served(plain.client)).controller;
  assert.ok(Array.isArray(all));
  assert.deepEqual(
    all.filter((c) => alpha.includes(c)).sort(),
    [...alpha].sort(),
    "every alpha controller capability by default",
  );
  await rejectsWith(
    plain.client.controller.getSnapshot({ snapshotId: "snap-00000000000000000000000000000000" }),
    GrpcStatus.NOT_FOUND,
  );

  const withheld = await startTestDriver(t, { enableAlphaCapabilities: false });
  const advertised = (await served(withheld.client)).controller;
  assert.ok(Array.isArray(advertised));
  assert.deepEqual(
    advertised.filter((c) => alpha.includes(c)).sort(),
    UPSTREAM_V1_16_ALPHA,
    "only v1.16's alpha capabilities when withheld",
  );
  // Not advertised means not served either.
  await rejectsWith(
    withheld.client.controller.getSnapshot({ snapshotId: "snap-00000000000000000000000000000000" }),
    GrpcStatus.UNIMPLEMENTED,
  );
});

test("--enable-list-snapshots=false withholds LIST_SNAPSHOTS and ListSnapshots; snapshots still work", async (t) => {
  const on = await startTestDriver(t);
  assert.ok(
    (await on.client.controller.controllerGetCapabilities({})).capabilities.some(
      (c) => c.rpc?.type === "LIST_SNAPSHOTS",
    ),
  );
  const off = await startTestDriver(t, { enableListSnapshots: false });
  const { client } = off;
  const types = (await client.controller.controllerGetCapabilities({})).capabilities.map((c) => c.rpc?.type);
  assert.ok(!types.includes("LIST_SNAPSHOTS"), `capabilities: ${types.join(", ")}`);
  assert.ok(types.includes("CREATE_DELETE_SNAPSHOT") && types.includes("GET_SNAPSHOT"));
  const message = await rejectsWith(client.controller.listSnapshots({}), GrpcStatus.UNIMPLEMENTED);
  assert.match(message, /--enable-list-snapshots/);
  const volumeId = (await client.controller.createVolume({ name: "v", volumeCapabilities: [MOUNT_RW] }))
    .volume!.volumeId;
  const snapshot = (await client.controller.createSnapshot({ name: "s", sourceVolumeId: volumeId }))
    .snapshot!;
  assert.equal(
    (await client.controller.getSnapshot({ snapshotId: snapshot.snapshotId })).snapshot?.sourceVolumeId,
    volumeId,
  );
});

test("--attach-limit is NodeGetInfo's max_volumes_per_node; -1 reports a random limit and enforces none", async (t) => {
  const limited = await startTestDriver(t, { attachLimit: 2 });
  assert.equal((await limited.client.node.nodeGetInfo({})).maxVolumesPerNode, "2");
  const both = await startTestDriver(t, { attachLimit: 5, maxVolumesPerNode: 3 });
  assert.equal(
    (await both.client.node.nodeGetInfo({})).maxVolumesPerNode,
    "5",
    "--attach-limit wins, as upstream",
  );
  const none = await startTestDriver(t);
  assert.equal((await none.client.node.nodeGetInfo({})).maxVolumesPerNode, "0");

  // The limit reported is the one ControllerPublishVolume enforces (csi-sanity's attach-limit test).
  const volumes = [];
  for (const name of ["a", "b", "c"])
    volumes.push(
      (await limited.client.controller.createVolume({ name, volumeCapabilities: [MOUNT_RW] })).volume!,
    );
  for (const volume of volumes.slice(0, 2))
    await limited.client.controller.controllerPublishVolume({
      volumeId: volume.volumeId,
      nodeId: "node-1",
      volumeCapability: MOUNT_RW,
    });
  await rejectsWith(
    limited.client.controller.controllerPublishVolume({
      volumeId: volumes[2]!.volumeId,
      nodeId: "node-1",
      volumeCapability: MOUNT_RW,
    }),
    GrpcStatus.RESOURCE_EXHAUSTED,
  );

  const random = await startTestDriver(t, { attachLimit: -1 });
  const seen = new Set<number>();
  for (let i = 0; i < 20; i++) {
    const limit = Number((await random.client.node.nodeGetInfo({})).maxVolumesPerNode);
    assert.ok(Number.isInteger(limit) && limit >= 1 && limit <= RANDOM_ATTACH_LIMIT_MAX, `limit ${limit}`);
    seen.add(limit);
  }
  assert.ok(seen.size > 1, "a fresh limit per call");
  const volume = (await random.client.controller.createVolume({ name: "r", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  await random.client.controller.controllerPublishVolume({
    volumeId: volume.volumeId,
    nodeId: "node-1",
    volumeCapability: MOUNT_RW,
  });
  assert.throws(
    () => new HostpathConfig({ nodeId: "n", stateDir: "/x", attachLimit: -2 }),
    /attach limit must be -1/,
  );
});

test("NodeGetVolumeStats/NodeExpandVolume: a path no volume can be at is NOT_FOUND, known volume or not", async (t) => {
  const { client } = await startTestDriver(t);
  const known = (await client.controller.createVolume({ name: "k", volumeCapabilities: [MOUNT_RW] })).volume!
    .volumeId;
  for (const volumeId of [known, "fake-vol-id-0123456789", "vol-0123456789abcdef0123456789abcdef"])
    for (const volumePath of ["some/path", "/path/does/not/exist"]) {
      const what = `${volumeId} at ${volumePath}`;
      assert.match(
        await rejectsWith(client.node.nodeGetVolumeStats({ volumeId, volumePath }), GrpcStatus.NOT_FOUND),
        /not at volume_path|does not exist/,
        what,
      );
      await rejectsWith(client.node.nodeExpandVolume({ volumeId, volumePath }), GrpcStatus.NOT_FOUND);
    }
  // A missing field is still INVALID_ARGUMENT.
  await rejectsWith(
    client.node.nodeGetVolumeStats({ volumeId: known, volumePath: "" }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  await rejectsWith(
    client.node.nodeExpandVolume({ volumeId: known, volumePath: "" }),
    GrpcStatus.INVALID_ARGUMENT,
  );
});

test("CreateVolume: idempotent by name, conflicts, ranges, capacity, validation", async (t) => {
  const { client } = await startTestDriver(t, {
    capacity: { "": 10 * MIB, fast: 4 * MIB },
    maxVolumeSize: 8 * MIB,
  });
  const request = {
    name: "pvc-1",
    capacityRange: { requiredBytes: 2 * MIB },
    volumeCapabilities: [MOUNT_RW],
  };
  const first = await client.controller.createVolume(request);
  const again = await client.controller.createVolume(request);
  assert.equal(again.volume?.volumeId, first.volume?.volumeId);
  assert.equal(first.volume?.capacityBytes, String(2 * MIB));
  assert.deepEqual(first.volume?.accessibleTopology[0]?.segments, { [TOPOLOGY_KEY_NODE]: "node-1" });
  await rejectsWith(
    client.controller.createVolume({ ...request, capacityRange: { requiredBytes: 3 * MIB } }),
    GrpcStatus.ALREADY_EXISTS,
  );
  await rejectsWith(
    client.controller.createVolume({ ...request, volumeCapabilities: [BLOCK_RW] }),
    GrpcStatus.ALREADY_EXISTS,
  );
  await rejectsWith(client.controller.createVolume({ ...request, name: "" }), GrpcStatus.INVALID_ARGUMENT);
  await rejectsWith(client.controller.createVolume({ name: "x" }), GrpcStatus.INVALID_ARGUMENT);
  await rejectsWith(
    client.controller.createVolume({ name: "x", volumeCapabilities: [MOUNT_RW, BLOCK_RW] }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  await rejectsWith(
    client.controller.createVolume({ ...request, name: "big", capacityRange: { requiredBytes: 9 * MIB } }),
    GrpcStatus.OUT_OF_RANGE,
  );
  await rejectsWith(
    client.controller.createVolume({ ...request, name: "neg", capacityRange: { requiredBytes: -1 } }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  // Pool "" has 10 MiB, 2 used: 8 more fit, a 9th does not.
  await client.controller.createVolume({
    ...request,
    name: "pvc-2",
    capacityRange: { requiredBytes: 8 * MIB },
  });
  const exhausted = await rejectsWith(
    client.controller.createVolume({ ...request, name: "pvc-3", capacityRange: { requiredBytes: 1 } }),
    GrpcStatus.RESOURCE_EXHAUSTED,
  );
  assert.match(exhausted, /capacity/);
  const capacity = await client.controller.getCapacity({ parameters: { kind: "fast" } });
  assert.equal(capacity.availableCapacity, String(4 * MIB));
  assert.equal((await client.controller.getCapacity({})).availableCapacity, "0");
  const other = await client.controller.getCapacity({
    accessibleTopology: { segments: { [TOPOLOGY_KEY_NODE]: "nowhere" } },
  });
  assert.equal(other.availableCapacity, "0");
  await client.controller.createVolume({ ...request, name: "fast-1", parameters: { kind: "fast" } });
  assert.equal(
    (await client.controller.getCapacity({ parameters: { kind: "fast" } })).availableCapacity,
    String(2 * MIB),
  );
  await rejectsWith(
    client.controller.createVolume({ ...request, name: "m", mutableParameters: { bogus: "1" } }),
    GrpcStatus.INVALID_ARGUMENT,
  );
});

test("names beyond the spec's 128-byte string limit are INVALID_ARGUMENT; multi-node modes are accepted as upstream", async (t) => {
  const { client } = await startTestDriver(t);
  const tooLong = await rejectsWith(
    client.controller.createVolume({ name: "n".repeat(129), volumeCapabilities: [MOUNT_RW] }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  assert.match(tooLong, /name is 129 bytes long; the CSI spec limits it to 128 bytes/);
  // Bytes, not characters: 65 two-byte characters are 130 bytes.
  await rejectsWith(
    client.controller.createVolume({ name: "é".repeat(65), volumeCapabilities: [MOUNT_RW] }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  const volume = await client.controller.createVolume({
    name: "n".repeat(128),
    volumeCapabilities: [MOUNT_RW],
  });
  const volumeId = volume.volume!.volumeId;
  await rejectsWith(
    client.controller.createSnapshot({ name: "s".repeat(129), sourceVolumeId: volumeId }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  await rejectsWith(
    client.groupController.createVolumeGroupSnapshot({ name: "g".repeat(129), sourceVolumeIds: [volumeId] }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  // Upstream csi-driver-host-path checks only the access type in CreateVolume, not the mode;
  // the spec does not require refusing MULTI_NODE_* either, so they are accepted here too.
  for (const mode of [
    "MULTI_NODE_READER_ONLY",
    "MULTI_NODE_SINGLE_WRITER",
    "MULTI_NODE_MULTI_WRITER",
  ] as const)
    await client.controller.createVolume({
      name: `multi-${mode}`,
      volumeCapabilities: [{ mount: {}, accessMode: { mode } }],
    });
});

test("topology: requirements place the volume; unknown nodes are NOT_FOUND for publish", async (t) => {
  const { client } = await startTestDriver(t);
  const seg = (node: string): { segments: Record<string, string> } => ({
    segments: { [TOPOLOGY_KEY_NODE]: node },
  });
  const created = await client.controller.createVolume({
    name: "placed",
    volumeCapabilities: [MOUNT_RW],
    accessibilityRequirements: { requisite: [seg("node-2"), seg("node-1")], preferred: [seg("node-2")] },
  });
  assert.deepEqual(created.volume?.accessibleTopology[0]?.segments, { [TOPOLOGY_KEY_NODE]: "node-2" });
  await rejectsWith(
    client.controller.createVolume({
      name: "nowhere",
      volumeCapabilities: [MOUNT_RW],
      accessibilityRequirements: { requisite: [{ segments: { zone: "a" } }] },
    }),
    GrpcStatus.RESOURCE_EXHAUSTED,
  );
  const volumeId = created.volume.volumeId;
  await client.controller.controllerPublishVolume({ volumeId, nodeId: "node-2", volumeCapability: MOUNT_RW });
  await rejectsWith(
    client.controller.controllerPublishVolume({ volumeId, nodeId: "node-9", volumeCapability: MOUNT_RW }),
    GrpcStatus.NOT_FOUND,
  );
});

test("GetCapacity: a controller-only instance answers for any node segment, a node instance for nodes it knows", async (t) => {
  const seg = (node: string) => ({ segments: { [TOPOLOGY_KEY_NODE]: node } });
  const controllerOnly = await startTestDriver(t, { nodeService: false, capacity: { "": 10 * MIB } });
  // No volume placed on node-7 yet: CreateVolume would place one there, so capacity says so.
  assert.equal(
    (await controllerOnly.client.controller.getCapacity({ accessibleTopology: seg("node-7") }))
      .availableCapacity,
    String(10 * MIB),
  );
  const combined = await startTestDriver(t, { capacity: { "": 10 * MIB } });
  assert.equal(
    (await combined.client.controller.getCapacity({ accessibleTopology: seg("node-7") })).availableCapacity,
    "0",
  );
});

test("publish bookkeeping, delete while published, limits, list pagination, get, validate", async (t) => {
  const { client } = await startTestDriver(t, { maxVolumesPerNode: 2 });
  const ids: string[] = [];
  for (const name of ["a", "b", "c"])
    ids.push(
      (await client.controller.createVolume({ name, volumeCapabilities: [MOUNT_RW] })).volume!.volumeId,
    );
  const [a, b, c] = ids as [string, string, string];
  const publish = { nodeId: "node-1", volumeCapability: MOUNT_RW };
  await client.controller.controllerPublishVolume({ ...publish, volumeId: a });
  await client.controller.controllerPublishVolume({ ...publish, volumeId: a });
  await rejectsWith(
    client.controller.controllerPublishVolume({ ...publish, volumeId: a, readonly: true }),
    GrpcStatus.ALREADY_EXISTS,
  );
  await client.controller.controllerPublishVolume({ ...publish, volumeId: b });
  await rejectsWith(
    client.controller.controllerPublishVolume({ ...publish, volumeId: c }),
    GrpcStatus.RESOURCE_EXHAUSTED,
  );
  await rejectsWith(
    client.controller.controllerPublishVolume({
      ...publish,
      volumeId: "vol-00000000000000000000000000000000",
    }),
    GrpcStatus.NOT_FOUND,
  );
  await rejectsWith(
    client.controller.controllerPublishVolume({ ...publish, volumeId: "../../etc" }),
    GrpcStatus.NOT_FOUND,
  );
  await rejectsWith(client.controller.deleteVolume({ volumeId: a }), GrpcStatus.FAILED_PRECONDITION);
  const got = await client.controller.controllerGetVolume({ volumeId: a });
  assert.deepEqual(got.status?.publishedNodeIds, ["node-1"]);
  assert.equal(got.status?.volumeCondition?.abnormal, false);

  const first = await client.controller.listVolumes({ maxEntries: 2 });
  assert.equal(first.entries.length, 2);
  assert.notEqual(first.nextToken, "");
  const rest = await client.controller.listVolumes({ startingToken: first.nextToken });
  const listed = [...first.entries, ...rest.entries].map((e) => e.volume?.volumeId);
  assert.deepEqual(listed, [...ids].sort());
  assert.equal(rest.nextToken, "");
  await rejectsWith(client.controller.listVolumes({ startingToken: "garbage" }), GrpcStatus.ABORTED);

  const valid = await client.controller.validateVolumeCapabilities({
    volumeId: a,
    volumeCapabilities: [MOUNT_RW],
  });
  assert.ok(valid.confirmed);
  const notValid = await client.controller.validateVolumeCapabilities({
    volumeId: a,
    volumeCapabilities: [BLOCK_RW],
  });
  assert.equal(notValid.confirmed, null);
  await rejectsWith(
    client.controller.validateVolumeCapabilities({ volumeId: a }),
    GrpcStatus.INVALID_ARGUMENT,
  );

  await client.controller.controllerUnpublishVolume({ volumeId: a, nodeId: "node-1" });
  await client.controller.controllerUnpublishVolume({ volumeId: a, nodeId: "node-1" });
  await client.controller.controllerUnpublishVolume({
    volumeId: "vol-00000000000000000000000000000000",
    nodeId: "node-1",
  });
  await client.controller.deleteVolume({ volumeId: a });
  await client.controller.deleteVolume({ volumeId: a });
  await rejectsWith(client.controller.controllerGetVolume({ volumeId: a }), GrpcStatus.NOT_FOUND);
});

test("snapshots copy data; restore and clone carry it; pagination and filters; expand; modify", async (t) => {
  const driver = await startTestDriver(t, { enableAlphaCapabilities: true });
  const { client } = driver;
  const source = (
    await client.controller.createVolume({
      name: "src",
      volumeCapabilities: [MOUNT_RW],
      capacityRange: { requiredBytes: 2 * MIB },
    })
  ).volume!;
  const dataDir = join(driver.stateDir, "volumes", source.volumeId);
  await writeFile(join(dataDir, "hello.txt"), "v1");
  const snap = (await client.controller.createSnapshot({ name: "snap-1", sourceVolumeId: source.volumeId }))
    .snapshot!;
  assert.equal(snap.readyToUse, true);
  assert.equal(snap.sizeBytes, String(2 * MIB));
  assert.equal(
    (await client.controller.createSnapshot({ name: "snap-1", sourceVolumeId: source.volumeId })).snapshot
      ?.snapshotId,
    snap.snapshotId,
  );
  await writeFile(join(dataDir, "hello.txt"), "v2");
  const other = (await client.controller.createVolume({ name: "other", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  await rejectsWith(
    client.controller.createSnapshot({ name: "snap-1", sourceVolumeId: other.volumeId }),
    GrpcStatus.ALREADY_EXISTS,
  );
  await rejectsWith(
    client.controller.createSnapshot({
      name: "snap-x",
      sourceVolumeId: "vol-00000000000000000000000000000000",
    }),
    GrpcStatus.NOT_FOUND,
  );

  const restored = (
    await client.controller.createVolume({
      name: "restored",
      volumeCapabilities: [MOUNT_RW],
      volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } },
    })
  ).volume!;
  assert.equal(restored.capacityBytes, String(2 * MIB));
  assert.equal(restored.contentSource?.snapshot?.snapshotId, snap.snapshotId);
  assert.equal(
    await readFile(join(driver.stateDir, "volumes", restored.volumeId, "hello.txt"), "utf8"),
    "v1",
  );
  const clone = (
    await client.controller.createVolume({
      name: "clone",
      volumeCapabilities: [MOUNT_RW],
      volumeContentSource: { volume: { volumeId: source.volumeId } },
    })
  ).volume!;
  assert.equal(await readFile(join(driver.stateDir, "volumes", clone.volumeId, "hello.txt"), "utf8"), "v2");
  await rejectsWith(
    client.controller.createVolume({
      name: "small",
      volumeCapabilities: [MOUNT_RW],
      capacityRange: { requiredBytes: MIB },
      volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } },
    }),
    GrpcStatus.OUT_OF_RANGE,
  );
  await rejectsWith(
    client.controller.createVolume({
      name: "nosrc",
      volumeCapabilities: [MOUNT_RW],
      volumeContentSource: { snapshot: { snapshotId: "snap-00000000000000000000000000000000" } },
    }),
    GrpcStatus.NOT_FOUND,
  );
  await rejectsWith(
    client.controller.createVolume({
      name: "blk",
      volumeCapabilities: [BLOCK_RW],
      volumeContentSource: { volume: { volumeId: source.volumeId } },
    }),
    GrpcStatus.INVALID_ARGUMENT,
  );

  // The snapshot is independent of its source.
  await client.controller.deleteVolume({ volumeId: source.volumeId });
  assert.equal(
    (await client.controller.getSnapshot({ snapshotId: snap.snapshotId })).snapshot?.sourceVolumeId,
    source.volumeId,
  );
  const snap2 = (await client.controller.createSnapshot({ name: "snap-2", sourceVolumeId: other.volumeId }))
    .snapshot!;
  const page1 = await client.controller.listSnapshots({ maxEntries: 1 });
  const page2 = await client.controller.listSnapshots({ startingToken: page1.nextToken });
  assert.deepEqual(
    [...page1.entries, ...page2.entries].map((e) => e.snapshot?.snapshotId).sort(),
    [snap.snapshotId, snap2.snapshotId].sort(),
  );
  assert.deepEqual(
    (await client.controller.listSnapshots({ sourceVolumeId: other.volumeId })).entries.map(
      (e) => e.snapshot?.snapshotId,
    ),
    [snap2.snapshotId],
  );
  assert.equal(
    (await client.controller.listSnapshots({ snapshotId: "snap-00000000000000000000000000000000" })).entries
      .length,
    0,
  );
  await rejectsWith(client.controller.listSnapshots({ startingToken: "x" }), GrpcStatus.ABORTED);
  await client.controller.deleteSnapshot({ snapshotId: snap.snapshotId });
  await client.controller.deleteSnapshot({ snapshotId: snap.snapshotId });
  await rejectsWith(client.controller.getSnapshot({ snapshotId: snap.snapshotId }), GrpcStatus.NOT_FOUND);

  const block = (
    await client.controller.createVolume({
      name: "blk2",
      volumeCapabilities: [BLOCK_RW],
      capacityRange: { requiredBytes: MIB },
    })
  ).volume!;
  const expanded = await client.controller.controllerExpandVolume({
    volumeId: block.volumeId,
    capacityRange: { requiredBytes: 3 * MIB },
  });
  assert.equal(expanded.capacityBytes, String(3 * MIB));
  assert.equal(expanded.nodeExpansionRequired, true);
  assert.equal((await stat(join(driver.stateDir, "volumes", `${block.volumeId}.img`))).size, 3 * MIB);
  await rejectsWith(
    client.controller.controllerExpandVolume({
      volumeId: block.volumeId,
      capacityRange: { requiredBytes: 4 * MIB, limitBytes: 2 * MIB },
    }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  await client.controller.controllerModifyVolume({
    volumeId: block.volumeId,
    mutableParameters: { iops: "100" },
  });
  await rejectsWith(
    client.controller.controllerModifyVolume({
      volumeId: block.volumeId,
      mutableParameters: { color: "red" },
    }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  await rejectsWith(
    client.controller.controllerModifyVolume({
      volumeId: "vol-00000000000000000000000000000000",
      mutableParameters: { iops: "1" },
    }),
    GrpcStatus.NOT_FOUND,
  );
});

test("group snapshots: create idempotently, get, members protected, delete", async (t) => {
  const { client } = await startTestDriver(t, { enableAlphaCapabilities: true });
  const v1 = (await client.controller.createVolume({ name: "g1", volumeCapabilities: [MOUNT_RW] })).volume!
    .volumeId;
  const v2 = (await client.controller.createVolume({ name: "g2", volumeCapabilities: [BLOCK_RW] })).volume!
    .volumeId;
  const created = (
    await client.groupController.createVolumeGroupSnapshot({ name: "grp", sourceVolumeIds: [v1, v2] })
  ).groupSnapshot!;
  assert.equal(created.snapshots.length, 2);
  assert.equal(created.readyToUse, true);
  const again = (
    await client.groupController.createVolumeGroupSnapshot({ name: "grp", sourceVolumeIds: [v2, v1] })
  ).groupSnapshot!;
  assert.equal(again.groupSnapshotId, created.groupSnapshotId);
  await rejectsWith(
    client.groupController.createVolumeGroupSnapshot({ name: "grp", sourceVolumeIds: [v1] }),
    GrpcStatus.ALREADY_EXISTS,
  );
  const member = created.snapshots[0]!;
  assert.equal(member.groupSnapshotId, created.groupSnapshotId);
  await rejectsWith(
    client.controller.deleteSnapshot({ snapshotId: member.snapshotId }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  const ids = created.snapshots.map((s) => s.snapshotId);
  await rejectsWith(
    client.groupController.getVolumeGroupSnapshot({
      groupSnapshotId: created.groupSnapshotId,
      snapshotIds: [ids[0]!],
    }),
    GrpcStatus.INVALID_ARGUMENT,
  );
  assert.equal(
    (
      await client.groupController.getVolumeGroupSnapshot({
        groupSnapshotId: created.groupSnapshotId,
        snapshotIds: ids,
      })
    ).groupSnapshot?.snapshots.length,
    2,
  );
  await client.groupController.deleteVolumeGroupSnapshot({
    groupSnapshotId: created.groupSnapshotId,
    snapshotIds: ids,
  });
  await client.groupController.deleteVolumeGroupSnapshot({
    groupSnapshotId: created.groupSnapshotId,
    snapshotIds: ids,
  });
  await rejectsWith(
    client.groupController.getVolumeGroupSnapshot({ groupSnapshotId: created.groupSnapshotId }),
    GrpcStatus.NOT_FOUND,
  );
  await rejectsWith(client.controller.getSnapshot({ snapshotId: member.snapshotId }), GrpcStatus.NOT_FOUND);
});

test("state survives a restart; an interrupted delete is finished at start, an interrupted create on retry", async (t) => {
  const driver = await startTestDriver(t);
  const { client } = driver;
  const kept = (await client.controller.createVolume({ name: "kept", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  const doomed = (await client.controller.createVolume({ name: "doomed", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  await driver.restart();
  // Simulate kill -9 states by editing the persisted intent the way a crash would leave it.
  const file = join(driver.stateDir, "controller.json");
  const state = JSON.parse(await readFile(file, "utf8")) as { volumes: Record<string, { phase: string }> };
  state.volumes[doomed.volumeId]!.phase = "deleting";
  state.volumes[kept.volumeId]!.phase = "creating";
  await driver.server.close();
  await writeFile(file, JSON.stringify(state));
  await driver.restart();
  await assert.rejects(stat(join(driver.stateDir, "volumes", doomed.volumeId)), { code: "ENOENT" });
  assert.deepEqual((await client.controller.listVolumes({})).entries.length, 0);
  const retried = await client.controller.createVolume({ name: "kept", volumeCapabilities: [MOUNT_RW] });
  assert.equal(retried.volume?.volumeId, kept.volumeId);
  assert.equal((await client.controller.listVolumes({})).entries.length, 1);
});

test("one controller per state dir: a live owner is refused, a dead one's pid file taken over", async (t) => {
  const driver = await startTestDriver(t);
  await driver.server.close();
  const pidFile = join(driver.stateDir, "controller.pid");
  await writeFile(pidFile, "1\n");
  await assert.rejects(driver.restart(), /in use by the hostpath controller with pid 1/);
  // A node-only instance does not claim the dir.
  await driver.restart({ controllerService: false });
  await driver.server.close();
  await writeFile(pidFile, "4194303\n");
  await driver.restart();
  assert.equal((await readFile(pidFile, "utf8")).trim(), String(process.pid));
  await driver.server.close();
  await assert.rejects(stat(pidFile), { code: "ENOENT" });
});

test("an interrupted create whose source is gone is dropped, not left reserving capacity", async (t) => {
  const driver = await startTestDriver(t, { capacity: { "": 4 * MIB } });
  const { client } = driver;
  const source = (
    await client.controller.createVolume({
      name: "src",
      volumeCapabilities: [MOUNT_RW],
      capacityRange: { requiredBytes: MIB },
    })
  ).volume!;
  const snapshot = (await client.controller.createSnapshot({ name: "s", sourceVolumeId: source.volumeId }))
    .snapshot!;
  const request = {
    name: "restore",
    volumeCapabilities: [MOUNT_RW],
    capacityRange: { requiredBytes: 2 * MIB },
    volumeContentSource: { snapshot: { snapshotId: snapshot.snapshotId } },
  };
  const restored = (await client.controller.createVolume(request)).volume!;
  await client.controller.deleteSnapshot({ snapshotId: snapshot.snapshotId });
  // As if the driver had been killed while populating "restore".
  await driver.server.close();
  const file = join(driver.stateDir, "controller.json");
  const state = JSON.parse(await readFile(file, "utf8")) as { volumes: Record<string, { phase: string }> };
  state.volumes[restored.volumeId]!.phase = "creating";
  await writeFile(file, JSON.stringify(state));
  await driver.restart();
  await rejectsWith(client.controller.createVolume(request), GrpcStatus.NOT_FOUND);
  assert.equal((await client.controller.getCapacity({})).availableCapacity, String(3 * MIB));
});

interface PersistedState {
  volumes: Record<string, { phase: string }>;
  snapshots: Record<string, { phase: string; groupSnapshotId?: string }>;
  groupSnapshots: Record<string, { phase: string; snapshotIds: string[] }>;
}

/** Stops the driver, lets `edit` leave the state the way a kill -9 would, and starts it again. */
async function crashAndRestart(
  driver: Awaited<ReturnType<typeof startTestDriver>>,
  edit: (state: PersistedState) => Promise<void> | void,
): Promise<void> {
  await driver.server.close();
  const file = join(driver.stateDir, "controller.json");
  const state = JSON.parse(await readFile(file, "utf8")) as PersistedState;
  await edit(state);
  await writeFile(file, JSON.stringify(state));
  await driver.restart();
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

test("crash during CreateSnapshot (intent recorded, data missing or partial): the retry finishes it", async (t) => {
  const driver = await startTestDriver(t, { enableAlphaCapabilities: true });
  const { client } = driver;
  const source = (await client.controller.createVolume({ name: "src", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  await writeFile(join(driver.stateDir, "volumes", source.volumeId, "data.txt"), "before the crash");
  const request = { name: "snap", sourceVolumeId: source.volumeId };
  const first = (await client.controller.createSnapshot(request)).snapshot!;
  const archive = join(driver.stateDir, "snapshots", `${first.snapshotId}.tar`);
  await crashAndRestart(driver, async (state) => {
    state.snapshots[first.snapshotId]!.phase = "creating";
    await rm(archive);
    await writeFile(`${archive}.tmp`, "half an archive");
  });
  // Not usable until finished: not listed, not gettable, not restorable.
  assert.deepEqual((await client.controller.listSnapshots({})).entries, []);
  await rejectsWith(client.controller.getSnapshot({ snapshotId: first.snapshotId }), GrpcStatus.NOT_FOUND);
  const retried = (await client.controller.createSnapshot(request)).snapshot!;
  assert.equal(retried.snapshotId, first.snapshotId);
  assert.equal(retried.readyToUse, true);
  assert.equal(await exists(`${archive}.tmp`), false);
  const restored = (
    await client.controller.createVolume({
      name: "restored",
      volumeCapabilities: [MOUNT_RW],
      volumeContentSource: { snapshot: { snapshotId: first.snapshotId } },
    })
  ).volume!;
  assert.equal(
    await readFile(join(driver.stateDir, "volumes", restored.volumeId, "data.txt"), "utf8"),
    "before the crash",
  );
});

test("crash during DeleteSnapshot: finished at start, and the retried delete succeeds", async (t) => {
  const driver = await startTestDriver(t);
  const { client } = driver;
  const source = (await client.controller.createVolume({ name: "src", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  const snapshot = (await client.controller.createSnapshot({ name: "snap", sourceVolumeId: source.volumeId }))
    .snapshot!;
  const archive = join(driver.stateDir, "snapshots", `${snapshot.snapshotId}.tar`);
  await crashAndRestart(driver, (state) => {
    state.snapshots[snapshot.snapshotId]!.phase = "deleting";
  });
  assert.equal(await exists(archive), false);
  assert.deepEqual((await client.controller.listSnapshots({})).entries, []);
  await client.controller.deleteSnapshot({ snapshotId: snapshot.snapshotId });
  // The name is free again: a new snapshot by that name is a new one.
  const again = (await client.controller.createSnapshot({ name: "snap", sourceVolumeId: source.volumeId }))
    .snapshot!;
  assert.notEqual(again.snapshotId, snapshot.snapshotId);
});

test("crash during group snapshot create and delete: retry finishes the create; start finishes the delete", async (t) => {
  const driver = await startTestDriver(t);
  const { client } = driver;
  const ids: string[] = [];
  for (const name of ["a", "b"]) {
    const id = (await client.controller.createVolume({ name, volumeCapabilities: [MOUNT_RW] })).volume!
      .volumeId;
    await writeFile(join(driver.stateDir, "volumes", id, "name.txt"), name);
    ids.push(id);
  }
  const request = { name: "group", sourceVolumeIds: ids };
  const group = (await client.groupController.createVolumeGroupSnapshot(request)).groupSnapshot!;
  const members = group.snapshots.map((s) => s.snapshotId);
  assert.equal(members.length, 2);
  const archive = (id: string): string => join(driver.stateDir, "snapshots", `${id}.tar`);
  await crashAndRestart(driver, async (state) => {
    state.groupSnapshots[group.groupSnapshotId]!.phase = "creating";
    // Killed after the first member's archive was written, before the second's.
    state.snapshots[members[1]!]!.phase = "creating";
    await rm(archive(members[1]!));
  });
  await rejectsWith(
    client.groupController.getVolumeGroupSnapshot({ groupSnapshotId: group.groupSnapshotId }),
    GrpcStatus.NOT_FOUND,
  );
  const retried = (await client.groupController.createVolumeGroupSnapshot(request)).groupSnapshot!;
  assert.equal(retried.groupSnapshotId, group.groupSnapshotId);
  assert.equal(retried.readyToUse, true);
  assert.deepEqual(
    retried.snapshots.map((s) => [s.snapshotId, s.readyToUse]),
    members.map((id) => [id, true]),
  );
  for (const id of members) assert.equal(await exists(archive(id)), true, id);

  await crashAndRestart(driver, (state) => {
    state.groupSnapshots[group.groupSnapshotId]!.phase = "deleting";
  });
  for (const id of members) assert.equal(await exists(archive(id)), false, id);
  assert.deepEqual((await client.controller.listSnapshots({})).entries, []);
  await client.groupController.deleteVolumeGroupSnapshot({
    groupSnapshotId: group.groupSnapshotId,
    snapshotIds: members,
  });
  // The persisted state (snapshot + journal) no longer has them.
  await driver.server.close();
  const state = JSON.parse(
    await readFile(join(driver.stateDir, "controller.json"), "utf8"),
  ) as PersistedState;
  assert.deepEqual([Object.keys(state.groupSnapshots), Object.keys(state.snapshots)], [[], []]);
});

test("upstream defaults: ModifyVolume off until enabled, then every key; expansion sides can be withheld", async (t) => {
  const upstream = await startTestDriver(t, {
    enableControllerModifyVolume: false,
    acceptedMutableParameterNames: [],
  });
  const volume = (
    await upstream.client.controller.createVolume({ name: "u", volumeCapabilities: [MOUNT_RW] })
  ).volume!;
  assert.ok(!((await served(upstream.client)).controller as string[]).includes("MODIFY_VOLUME"));
  const message = await rejectsWith(
    upstream.client.controller.controllerModifyVolume({
      volumeId: volume.volumeId,
      mutableParameters: { iops: "1" },
    }),
    GrpcStatus.UNIMPLEMENTED,
  );
  assert.match(message, /--enable-controller-modify-volume/);

  const open = await startTestDriver(t, {
    enableControllerModifyVolume: true,
    acceptedMutableParameterNames: [],
  });
  const any = (
    await open.client.controller.createVolume({
      name: "any",
      volumeCapabilities: [MOUNT_RW],
      mutableParameters: { color: "red" },
    })
  ).volume!;
  await open.client.controller.controllerModifyVolume({
    volumeId: any.volumeId,
    mutableParameters: { color: "blue", anything: "goes" },
  });

  const noController = await startTestDriver(t, { disableControllerExpansion: true });
  const caps = await served(noController.client);
  assert.ok(!(caps.controller as string[]).includes("EXPAND_VOLUME"));
  assert.ok(!(caps.plugin as string[]).includes("expansion:ONLINE"));
  assert.ok((caps.node as string[]).includes("EXPAND_VOLUME"));
  const noNode = await startTestDriver(t, { disableNodeExpansion: true });
  assert.ok(!((await served(noNode.client)).node as string[]).includes("EXPAND_VOLUME"));
  await rejectsWith(
    noNode.client.node.nodeExpandVolume({ volumeId: "vol-1", volumePath: "/x" }),
    GrpcStatus.UNIMPLEMENTED,
  );
  const none = await served((await startTestDriver(t, { enableVolumeExpansion: false })).client);
  assert.ok(!(none.controller as string[]).includes("EXPAND_VOLUME"));
  assert.ok(!(none.node as string[]).includes("EXPAND_VOLUME"));
});

test("--attach-limit: ControllerPublishVolume past the limit on one node is RESOURCE_EXHAUSTED", async (t) => {
  const { client } = await startTestDriver(t, { attachLimit: 1 });
  const ids: string[] = [];
  for (const name of ["a1", "a2"])
    ids.push(
      (await client.controller.createVolume({ name, volumeCapabilities: [MOUNT_RW] })).volume!.volumeId,
    );
  const publish = (volumeId: string) =>
    client.controller.controllerPublishVolume({ volumeId, nodeId: "node-1", volumeCapability: MOUNT_RW });
  await publish(ids[0]!);
  const message = await rejectsWith(publish(ids[1]!), GrpcStatus.RESOURCE_EXHAUSTED);
  assert.match(message, /--attach-limit/);
});

test("volume condition: backing data deleted → abnormal in ControllerGetVolume and ListVolumes; restored → healthy", async (t) => {
  const { client, stateDir } = await startTestDriver(t);
  const capabilities = await client.controllerCapabilities();
  assert.ok(
    capabilities.has("VOLUME_CONDITION") &&
      capabilities.has("GET_VOLUME") &&
      capabilities.has("LIST_VOLUMES"),
  );
  const volumeId = (await client.controller.createVolume({ name: "sick", volumeCapabilities: [MOUNT_RW] }))
    .volume!.volumeId;
  const healthy = await client.controller.controllerGetVolume({ volumeId });
  assert.equal(healthy.status?.volumeCondition?.abnormal, false);

  const data = join(stateDir, "volumes", volumeId);
  await rm(data, { recursive: true });
  const missing = { abnormal: true, message: "The source path of the volume doesn't exist" };
  assert.deepEqual(
    (await client.controller.controllerGetVolume({ volumeId })).status?.volumeCondition,
    missing,
  );
  const listed = (await client.controller.listVolumes({})).entries.find(
    (e) => e.volume?.volumeId === volumeId,
  );
  assert.deepEqual(listed?.status?.volumeCondition, missing);

  await mkdir(data);
  assert.equal(
    (await client.controller.controllerGetVolume({ volumeId })).status?.volumeCondition?.abnormal,
    false,
  );
});
