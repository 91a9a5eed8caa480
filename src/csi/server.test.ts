// The driver-server scaffolding over real Unix sockets with real gRPC: endpoint forms,
// UNIMPLEMENTED, socket mode, stale-socket handling, graceful close, int64 exactness, error
// mapping, streaming, plugin registration, and secrets never reaching the logs.

import assert from "node:assert/strict";
import { stat, writeFile, readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { memoryLogger } from "../base/index.ts";
import { CsiError, GrpcStatus, serveCsi, type ControllerService, type IdentityService } from "./index.ts";
import { codeIs, connect, serve } from "../../test/harness/csi.ts";
import { tempDir } from "../../test/harness/cleanup.ts";

const identity: IdentityService = {
  getPluginInfo: async () => ({ name: "test.csi.k8s.io", vendorVersion: "1.0.0" }),
  getPluginCapabilities: async () => ({
    capabilities: [
      { service: { type: "CONTROLLER_SERVICE" } },
      { service: { type: "VOLUME_ACCESSIBILITY_CONSTRAINTS" } },
      { volumeExpansion: { type: "ONLINE" } },
    ],
  }),
  probe: async () => ({ ready: { value: true } }),
};

test("serves on every endpoint form and answers GetPluginInfo", async (t) => {
  const dir = await tempDir(t);
  const forms = [
    `unix://${join(dir, "a.sock")}`,
    `unix:${join(dir, "b.sock")}`,
    join(dir, "c.sock"),
    join(dir, "nested", "d.sock"),
  ];
  for (const endpoint of forms) {
    const server = await serve(t, { endpoint, identity });
    const client = connect(t, endpoint);
    const info = await client.identity.getPluginInfo({});
    assert.deepEqual(info, { name: "test.csi.k8s.io", vendorVersion: "1.0.0", manifest: {} });
    // Every form names the same kind of socket: the client can reach it by plain path too.
    const byPath = connect(t, server.path);
    assert.equal((await byPath.identity.getPluginInfo({})).name, "test.csi.k8s.io");
  }
});

test("absent methods and services answer UNIMPLEMENTED", async (t) => {
  const dir = await tempDir(t);
  const endpoint = join(dir, "csi.sock");
  await serve(t, { endpoint, identity, controller: { deleteVolume: async () => ({}) } });
  const client = connect(t, endpoint);
  await client.controller.deleteVolume({ volumeId: "v" });
  await assert.rejects(client.controller.createVolume({ name: "x" }), (error: unknown) => {
    codeIs(GrpcStatus.UNIMPLEMENTED)(error);
    assert.match(String(error), /UNIMPLEMENTED: CreateVolume is not implemented by this plugin/);
    return true;
  });
  await assert.rejects(client.node.nodeGetInfo({}), codeIs(GrpcStatus.UNIMPLEMENTED));
  await assert.rejects(client.registration.getInfo({}), codeIs(GrpcStatus.UNIMPLEMENTED));
  const stream = client.snapshotMetadata.getMetadataAllocated({ snapshotId: "s" });
  await assert.rejects(async () => {
    for await (const _ of stream) assert.fail("no message expected");
  }, codeIs(GrpcStatus.UNIMPLEMENTED));
});

test("the socket has mode 0660 or stricter; a looser mode is refused", async (t) => {
  const dir = await tempDir(t);
  const server = await serve(t, { endpoint: join(dir, "csi.sock"), identity });
  const mode = (await stat(server.path)).mode & 0o777;
  assert.equal(mode & ~0o660, 0, `mode ${mode.toString(8)}`);
  const strict = await serve(t, { endpoint: join(dir, "strict.sock"), identity, socketMode: 0o600 });
  assert.equal((await stat(strict.path)).mode & 0o777, 0o600);
  await assert.rejects(
    serveCsi({ endpoint: join(dir, "loose.sock"), identity, socketMode: 0o666 }),
    /looser than 0660/,
  );
});

test("a stale socket is removed; a live socket or a regular file at the path is kept, with an error naming it", async (t) => {
  const dir = await tempDir(t);
  const stale = join(dir, "stale.sock");
  // A driver that died leaves its socket file behind: a child process that binds and exits.
  execFileSync(process.execPath, [
    "-e",
    "require('node:net').createServer().listen(process.argv[1], () => process.exit(0))",
    stale,
  ]);
  assert.ok((await stat(stale)).isSocket(), "precondition: a stale socket exists");
  await serve(t, { endpoint: stale, identity });
  assert.equal((await connect(t, stale).identity.getPluginInfo({})).name, "test.csi.k8s.io");

  await assert.rejects(serveCsi({ endpoint: stale, identity }), /another process is serving on it/);
  assert.equal((await connect(t, stale).identity.getPluginInfo({})).name, "test.csi.k8s.io", "still served");

  const regular = join(dir, "not-a-socket");
  await writeFile(regular, "precious");
  await assert.rejects(serveCsi({ endpoint: regular, identity }), (error: unknown) => {
    assert.ok(error instanceof Error);
    assert.match(error.message, /not-a-socket: it exists and is not a socket \(refusing to delete it\)/);
    return true;
  });
  assert.equal(await readFile(regular, "utf8"), "precious");
});

test("close() lets an in-flight call finish, then removes the socket", async (t) => {
  const dir = await tempDir(t);
  let release!: () => void;
  let started!: () => void;
  const callStarted = new Promise<void>((resolve) => (started = resolve));
  const server = await serveCsi({
    endpoint: join(dir, "csi.sock"),
    identity,
    controller: {
      deleteVolume: async () => {
        started();
        await new Promise<void>((resolve) => (release = resolve));
        return {};
      },
    },
  });
  const client = connect(t, server.path);
  const inFlight = client.controller.deleteVolume({ volumeId: "v" });
  await callStarted;
  const closed = server.close();
  release();
  assert.deepEqual(await inFlight, {});
  await closed;
  await assert.rejects(stat(server.path), /ENOENT/);
  await server.close(); // idempotent
});

test("close() cancels calls that outlive the grace period, through the handler's signal", async (t) => {
  const dir = await tempDir(t);
  let started!: () => void;
  const callStarted = new Promise<void>((resolve) => (started = resolve));
  let sawAbort = false;
  const server = await serveCsi({
    endpoint: join(dir, "csi.sock"),
    identity,
    shutdownGraceMs: 50,
    controller: {
      deleteVolume: async (_request, context) => {
        started();
        await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve()));
        sawAbort = true;
        return {};
      },
    },
  });
  const client = connect(t, server.path);
  const outcome = client.controller.deleteVolume({ volumeId: "v" }).then(
    () => undefined,
    (error: unknown) => error,
  );
  await callStarted;
  await server.close();
  const error = await outcome;
  assert.ok(
    typeof error === "object" && error !== null && "code" in error,
    `the call failed: ${String(error)}`,
  );
  assert.equal(sawAbort, true);
});

test("int64 values above 2^53 round-trip exactly through CreateVolume", async (t) => {
  const dir = await tempDir(t);
  const seen: string[] = [];
  const controller: Partial<ControllerService> = {
    createVolume: async (request) => {
      seen.push(request.capacityRange?.requiredBytes ?? "", request.capacityRange?.limitBytes ?? "");
      return {
        volume: { volumeId: request.name, capacityBytes: request.capacityRange?.limitBytes ?? "0" },
      };
    },
  };
  const server = await serve(t, { endpoint: join(dir, "csi.sock"), identity, controller });
  const client = connect(t, server.path);
  for (const [required, limit] of [
    ["9007199254740993", "9223372036854775807"],
    ["1", "9007199254740993"],
  ] as const) {
    const response = await client.controller.createVolume({
      name: "pvc-1",
      capacityRange: { requiredBytes: required, limitBytes: limit },
    });
    assert.equal(response.volume?.capacityBytes, limit);
    assert.equal(seen.at(-2), required);
    assert.equal(seen.at(-1), limit);
  }
});

test("CsiError reaches the client as is; other errors become a generic INTERNAL", async (t) => {
  const dir = await tempDir(t);
  const { logger, lines } = memoryLogger();
  const server = await serve(t, {
    endpoint: join(dir, "csi.sock"),
    identity,
    logger,
    controller: {
      createVolume: async () => {
        throw new CsiError(GrpcStatus.ALREADY_EXISTS, "volume pvc-1 exists with a different size");
      },
      deleteVolume: async () => {
        throw new Error("db password=hunter2 at /secret/path");
      },
    },
  });
  const client = connect(t, server.path);
  await assert.rejects(client.controller.createVolume({ name: "pvc-1" }), (error: unknown) => {
    codeIs(GrpcStatus.ALREADY_EXISTS)(error);
    assert.equal((error as { details?: unknown }).details, "volume pvc-1 exists with a different size");
    return true;
  });
  await assert.rejects(client.controller.deleteVolume({ volumeId: "v" }), (error: unknown) => {
    codeIs(GrpcStatus.INTERNAL)(error);
    assert.equal((error as { details?: unknown }).details, "internal error");
    return true;
  });
  assert.ok(lines.some((line) => line.includes("unexpected error") && line.includes("DeleteVolume")));
});

test("server-streaming GetMetadataAllocated delivers every message, and errors after some", async (t) => {
  const dir = await tempDir(t);
  const server = await serve(t, {
    endpoint: join(dir, "csi.sock"),
    identity,
    snapshotMetadata: {
      async *getMetadataAllocated(request) {
        for (let i = 0; i < 3; i++) {
          yield {
            blockMetadataType: "FIXED_LENGTH",
            volumeCapacityBytes: "9223372036854775807",
            blockMetadata: [{ byteOffset: String(i * 4096), sizeBytes: "4096" }],
          };
        }
        if (request.snapshotId === "bad") throw new CsiError(GrpcStatus.NOT_FOUND, "snapshot bad not found");
      },
    },
  });
  const client = connect(t, server.path);
  const offsets: string[] = [];
  for await (const message of client.snapshotMetadata.getMetadataAllocated({ snapshotId: "good" })) {
    assert.equal(message.blockMetadataType, "FIXED_LENGTH");
    assert.equal(message.volumeCapacityBytes, "9223372036854775807");
    offsets.push(message.blockMetadata[0]?.byteOffset ?? "");
  }
  assert.deepEqual(offsets, ["0", "4096", "8192"]);
  let received = 0;
  await assert.rejects(async () => {
    for await (const _ of client.snapshotMetadata.getMetadataAllocated({ snapshotId: "bad" })) received++;
  }, codeIs(GrpcStatus.NOT_FOUND));
  assert.equal(received, 3);
});

test("plugin registration round trip on /pluginregistration.Registration/*", async (t) => {
  const dir = await tempDir(t);
  const { logger, lines } = memoryLogger({ verbosity: 5 });
  const statuses: unknown[] = [];
  const server = await serve(t, {
    endpoint: join(dir, "hostpath.csi.k8s.io-reg.sock"),
    logger,
    registration: {
      getInfo: async () => ({
        type: "CSIPlugin",
        name: "hostpath.csi.k8s.io",
        endpoint: "/var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock",
        supportedVersions: ["1.0.0"],
      }),
      notifyRegistrationStatus: async (status) => {
        statuses.push(status);
        return {};
      },
    },
  });
  const client = connect(t, server.path);
  assert.deepEqual(await client.registration.getInfo({}), {
    type: "CSIPlugin",
    name: "hostpath.csi.k8s.io",
    endpoint: "/var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock",
    supportedVersions: ["1.0.0"],
  });
  await client.registration.notifyRegistrationStatus({ pluginRegistered: false, error: "version mismatch" });
  assert.deepEqual(statuses, [{ pluginRegistered: false, error: "version mismatch" }]);
  assert.ok(lines.some((line) => line.includes('"/pluginregistration.Registration/GetInfo"')));
  assert.ok(
    lines.some((line) => line.includes('"/pluginregistration.Registration/NotifyRegistrationStatus"')),
  );
  await assert.rejects(client.identity.probe({}), codeIs(GrpcStatus.UNIMPLEMENTED));
});

test("secret values never appear in server or client logs, at the highest verbosity", async (t) => {
  const dir = await tempDir(t);
  const secret = "pa55-w0rd-never-logged";
  const server = memoryLogger({ verbosity: 10 });
  const clientLog = memoryLogger({ verbosity: 10 });
  const endpoint = join(dir, "csi.sock");
  await serve(t, {
    endpoint,
    identity,
    logger: server.logger,
    controller: {
      createVolume: async (request) => ({ volume: { volumeId: request.name, capacityBytes: "1048576" } }),
      createSnapshot: async (request) => ({ snapshot: { snapshotId: request.name, sourceVolumeId: "v" } }),
      controllerPublishVolume: async () => ({ publishContext: { device: "/dev/loop0" } }),
    },
    node: {
      nodeStageVolume: async () => ({}),
      nodePublishVolume: async () => {
        throw new CsiError(GrpcStatus.FAILED_PRECONDITION, "not staged");
      },
    },
  });
  const client = connect(t, endpoint, { logger: clientLog.logger });
  const secrets = { password: secret, token: secret };
  await client.controller.createVolume({ name: "pvc-1", parameters: { fast: "yes" }, secrets });
  await client.controller.createSnapshot({ name: "snap-1", sourceVolumeId: "v", secrets });
  await client.controller.controllerPublishVolume({ volumeId: "v", nodeId: "n", secrets });
  await client.node.nodeStageVolume({ volumeId: "v", stagingTargetPath: "/s", secrets });
  await assert.rejects(
    client.node.nodePublishVolume({ volumeId: "v", targetPath: "/t", secrets }),
    codeIs(GrpcStatus.FAILED_PRECONDITION),
  );
  const all = [...server.lines, ...clientLog.lines].join("");
  assert.ok(server.lines.length >= 10 && clientLog.lines.length >= 10, "requests and responses were traced");
  assert.ok(all.includes("***stripped***"));
  assert.ok(all.includes('"fast":"yes"'), "non-secret fields are logged");
  assert.ok(all.includes("/csi.v1.Node/NodeStageVolume"));
  assert.ok(!all.includes(secret), "a secret value reached a log line");
});

test("aborting the signal closes the server and removes the socket", async (t) => {
  const dir = await tempDir(t);
  const controller = new AbortController();
  const server = await serveCsi({ endpoint: join(dir, "csi.sock"), identity, signal: controller.signal });
  const client = connect(t, server.path);
  await client.identity.probe({});
  controller.abort();
  await server.close(); // the same shutdown the abort started
  await assert.rejects(stat(server.path), /ENOENT/);
  await assert.rejects(client.identity.probe({}), codeIs(GrpcStatus.UNAVAILABLE));
});
