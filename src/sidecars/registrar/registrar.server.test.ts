// The registrar against the real virtual node (startNode) and the real hostpath driver, in
// process and as a `csikit registrar` child process: registration lands in CSINode; the
// socket is private (0600) and answers GetInfo with upstream's fields; /healthz is 200 "ok",
// 404 while the socket is missing; SIGTERM (abort) removes the socket and deregisters; a
// restart registers again; a registration the node refuses ends the registrar non-zero.

import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { lstat, mkdir, readdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { GVR, type CSINode } from "../../api/index.ts";
import { silentLogger } from "../../base/index.ts";
import { CsiClient, GrpcStatus } from "../../csi/index.ts";
import { serveHostpathDriver } from "../../drivers/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import { runNode, serveScriptedNode, testServer } from "../../../test/harness/node.ts";
import { RegistrationRefusedError, registrationSocketPath, startRegistrar } from "./index.ts";
import { until } from "../../../test/harness/until.ts";
import { defer, tempDir } from "../../../test/harness/cleanup.ts";

const DRIVER = "hostpath.csi.k8s.io";
const MAIN = join(import.meta.dirname, "..", "..", "cli", "main.ts");

async function hostpath(t: TestContext, root: string, nodeId = "hp-node-a") {
  const dir = await tempDir(t, "csikit-reg-driver-");
  const driver = await serveHostpathDriver({
    endpoint: join(dir, "csi.sock"),
    nodeId,
    stateDir: join(dir, "state"),
    allowedPathRoots: [root],
  });
  defer(t, () => driver.close());
  return driver;
}

async function csiNodeDrivers(client: KubeClient, node = "node-a"): Promise<string[]> {
  return (await client.get<CSINode>(GVR.csiNodes, node)).spec.drivers.map((d) => `${d.name}=${d.nodeID}`);
}

/** startRegistrar in-process; stopped (like SIGTERM) when the test ends. */
function runRegistrar(
  t: TestContext,
  options: { csiAddress: string; root: string; httpEndpoint?: string },
): {
  stop: () => Promise<void>;
  done: Promise<void>;
  serving: Promise<{ socketPath: string; httpUrl?: string }>;
} {
  const controller = new AbortController();
  let serving!: (info: { socketPath: string; httpUrl?: string }) => void;
  const servingPromise = new Promise<{ socketPath: string; httpUrl?: string }>(
    (resolve) => (serving = resolve),
  );
  const done = startRegistrar(
    {
      csiAddress: options.csiAddress,
      kubeletRegistrationPath: options.csiAddress,
      pluginRegistrationPath: join(options.root, "plugins_registry"),
      httpEndpoint: options.httpEndpoint ?? "",
      logger: silentLogger,
      onServing: serving,
    },
    controller.signal,
  );
  const stop = async (): Promise<void> => {
    controller.abort();
    await done.catch(() => undefined);
  };
  defer(t, stop);
  return {
    stop,
    done,
    serving: Promise.race([servingPromise, done.then(() => Promise.reject(new Error("registrar ended")))]),
  };
}

test("registers hostpath with the virtual node; private socket, upstream GetInfo, /healthz; abort deregisters; a restart registers again", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const driver = await hostpath(t, root);
  await runNode(t, client, { nodeName: "node-a", rootDir: root });

  const first = runRegistrar(t, { csiAddress: driver.path, root, httpEndpoint: "127.0.0.1:0" });
  const { socketPath, httpUrl } = await first.serving;
  assert.equal(socketPath, join(root, "plugins_registry", `${DRIVER}-reg.sock`));
  assert.equal(registrationSocketPath(join(root, "plugins_registry"), DRIVER), socketPath);
  await until(async () => (await csiNodeDrivers(client)).length === 1, "CSINode entry");
  assert.deepEqual(await csiNodeDrivers(client), [`${DRIVER}=hp-node-a`]);

  const mode = (await stat(socketPath)).mode & 0o777;
  assert.equal(mode & 0o077, 0, `registration socket mode ${mode.toString(8)} is private to its user`);
  const kubelet = CsiClient.connect(socketPath);
  defer(t, () => kubelet.close());
  assert.deepEqual(await kubelet.registration.getInfo({}, { timeoutMs: 5000 }), {
    type: "CSIPlugin",
    name: DRIVER,
    endpoint: driver.path,
    supportedVersions: ["1.0.0"],
  });
  assert.ok(httpUrl);
  const healthy = await fetch(`${httpUrl}/healthz`);
  assert.deepEqual([healthy.status, await healthy.text()], [200, "ok"]);

  await first.stop();
  await assert.rejects(lstat(socketPath), { code: "ENOENT" }, "socket removed on stop");
  await until(async () => (await csiNodeDrivers(client)).length === 0, "CSINode entry removed");

  const second = runRegistrar(t, { csiAddress: driver.path, root });
  await second.serving;
  await until(async () => (await csiNodeDrivers(client)).length === 1, "registered again");
  await second.stop();
});

test("/healthz: 404 while the registration socket is missing; a killed registrar's private dir is cleaned up", async (t) => {
  const root = await tempDir(t);
  const driver = await hostpath(t, root);
  const prefix = createHash("sha256").update(`${DRIVER}-reg.sock`).digest("hex").slice(0, 8);
  const leftover = join(root, "plugins_registry", `.reg-${prefix}-killed`);
  await mkdir(leftover, { recursive: true });
  const registrar = runRegistrar(t, { csiAddress: driver.path, root, httpEndpoint: "127.0.0.1:0" });
  const { socketPath, httpUrl } = await registrar.serving;
  assert.deepEqual(await readdir(join(root, "plugins_registry")), [`${DRIVER}-reg.sock`]);
  assert.equal((await fetch(`${httpUrl}/healthz`)).status, 200);
  await unlink(socketPath);
  const missing = await fetch(`${httpUrl}/healthz`);
  assert.deepEqual([missing.status, await missing.text()], [404, "registration socket does not exist"]);
});

test("NotifyRegistrationStatus(false) ends the registrar with RegistrationRefusedError and removes its socket", async (t) => {
  const root = await tempDir(t);
  const driver = await hostpath(t, root);
  const registrar = runRegistrar(t, { csiAddress: driver.path, root });
  const { socketPath } = await registrar.serving;
  const kubelet = CsiClient.connect(socketPath);
  defer(t, () => kubelet.close());
  await kubelet.registration.notifyRegistrationStatus(
    { pluginRegistered: false, error: "plugin validation failed" },
    { timeoutMs: 5000 },
  );
  await assert.rejects(registrar.done, (error: unknown) => {
    assert.ok(error instanceof RegistrationRefusedError);
    assert.match(error.message, /plugin validation failed/);
    return true;
  });
  await assert.rejects(lstat(socketPath), { code: "ENOENT" });
});

/** `csikit registrar` as a child process; killed when the test ends. */
function spawnRegistrar(
  t: TestContext,
  args: string[],
): { child: ChildProcess; exit: Promise<number | null>; stderr: () => string } {
  const child = spawn(process.execPath, [MAIN, "registrar", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  defer(t, async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exit;
  });
  return { child, exit, stderr: () => stderr };
}

test("csikit registrar: waits for a driver that starts later, registers, SIGTERM removes the socket (exit 0) and deregisters", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-reg-driver-");
  await runNode(t, client, { nodeName: "node-a", rootDir: root });
  const csiSocket = join(dir, "csi.sock");
  const registrar = spawnRegistrar(t, [
    `--csi-address=${csiSocket}`,
    `--kubelet-registration-path=${csiSocket}`,
    `--plugin-registration-path=${join(root, "plugins_registry")}`,
    "-v=5",
  ]);
  // The driver is not there yet: the registrar must wait, not exit.
  await until(
    () => registrar.stderr().includes("Attempting to open a gRPC connection"),
    "registrar connecting",
    { timeoutMs: 60_000 },
  );
  assert.equal(registrar.child.exitCode, null, registrar.stderr());
  const driver = await serveHostpathDriver({
    endpoint: csiSocket,
    nodeId: "hp-node-a",
    stateDir: join(dir, "state"),
    allowedPathRoots: [root],
  });
  defer(t, () => driver.close());
  await until(async () => (await csiNodeDrivers(client)).length === 1, "CSINode entry", {
    timeoutMs: 60_000,
  });
  const socketPath = join(root, "plugins_registry", `${DRIVER}-reg.sock`);
  assert.ok((await lstat(socketPath)).isSocket());
  registrar.child.kill("SIGTERM");
  assert.equal(await registrar.exit, 0, registrar.stderr());
  await assert.rejects(lstat(socketPath), { code: "ENOENT" });
  await until(async () => (await csiNodeDrivers(client)).length === 0, "CSINode entry removed");
});

test("csikit registrar: the node refusing the registration (NodeGetInfo fails) exits 1 with the node's error", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-reg-driver-");
  const scripted = await serveScriptedNode(t, {
    endpoint: join(dir, "csi.sock"),
    nodeId: "scripted-a",
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
  });
  scripted.failWith("NodeGetInfo", GrpcStatus.INTERNAL);
  await runNode(t, client, { nodeName: "node-a", rootDir: root });
  const registrar = spawnRegistrar(t, [
    `--csi-address=${scripted.server.path}`,
    `--kubelet-registration-path=${scripted.server.path}`,
    `--plugin-registration-path=${join(root, "plugins_registry")}`,
  ]);
  const code = await Promise.race([
    registrar.exit,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no exit: ${registrar.stderr()}`)), 60_000).unref(),
    ),
  ]);
  assert.equal(code, 1, registrar.stderr());
  assert.match(registrar.stderr(), /refused the registration: .*error updating CSI node info/);
  assert.deepEqual(await csiNodeDrivers(client), []);
});

/** One protobuf length-delimited field: tag (field number, wire type 2), length, bytes. */
function lengthDelimited(field: number, text: string): Buffer {
  const bytes = Buffer.from(text, "utf8");
  assert.ok(bytes.length < 128, "one-byte lengths only");
  return Buffer.concat([Buffer.from([(field << 3) | 2, bytes.length]), bytes]);
}

/** A unary call with raw bytes both ways: what a Go kubelet puts on the wire, no csikit codec. */
function rawCall(socketPath: string, method: string, request: Buffer): Promise<Buffer> {
  const client = new grpc.Client(`unix:${socketPath}`, grpc.credentials.createInsecure());
  return new Promise<Buffer>((resolve, reject) => {
    client.makeUnaryRequest(
      method,
      (b: Buffer) => b,
      (b: Buffer) => b,
      request,
      { deadline: Date.now() + 10_000 },
      (error, response) => {
        client.close();
        if (error || !response) reject(error ?? new Error("no response"));
        else resolve(response);
      },
    );
  });
}

test("wire compatibility with kubelet's pluginregistration (from the proto's field numbers, no csikit codec)", async (t) => {
  // An upstream Go kubelet cannot run here; this is its side of the wire, byte for byte:
  // method paths in package `pluginregistration`; PluginInfo{type=1, name=2, endpoint=3,
  // supported_versions=4}; RegistrationStatus{plugin_registered=1 (bool), error=2}.
  const root = await tempDir(t);
  const driver = await hostpath(t, root);
  const registrar = runRegistrar(t, { csiAddress: driver.path, root });
  const { socketPath } = await registrar.serving;
  const info = await rawCall(socketPath, "/pluginregistration.Registration/GetInfo", Buffer.alloc(0));
  assert.deepEqual(
    info,
    Buffer.concat([
      lengthDelimited(1, "CSIPlugin"),
      lengthDelimited(2, DRIVER),
      lengthDelimited(3, driver.path),
      lengthDelimited(4, "1.0.0"),
    ]),
  );
  // plugin_registered=true is field 1 varint 1; the answer is the empty RegistrationStatusResponse.
  const accepted = await rawCall(
    socketPath,
    "/pluginregistration.Registration/NotifyRegistrationStatus",
    Buffer.from([0x08, 0x01]),
  );
  assert.equal(accepted.length, 0);
  // false is proto3's default, so Go sends only the error (field 2): the registrar must stop.
  await rawCall(
    socketPath,
    "/pluginregistration.Registration/NotifyRegistrationStatus",
    lengthDelimited(2, "nope"),
  );
  await assert.rejects(registrar.done, /refused the registration: nope/);
});
