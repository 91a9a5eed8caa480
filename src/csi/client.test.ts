// The typed client against real servers on real Unix sockets: connection loss and reconnect,
// capability helpers, deadlines and cancellation (waitForReady is in ready.test.ts).

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { GrpcStatus, serveCsi, type IdentityService } from "./index.ts";
import { codeIs, connect, serve } from "../../test/harness/csi.ts";
import { until } from "../../test/harness/until.ts";
import { tempDir } from "../../test/harness/cleanup.ts";

const identity: IdentityService = {
  getPluginInfo: async () => ({ name: "test.csi.k8s.io", vendorVersion: "1" }),
  getPluginCapabilities: async () => ({
    capabilities: [
      { service: { type: "CONTROLLER_SERVICE" } },
      { service: { type: "GROUP_CONTROLLER_SERVICE" } },
      { volumeExpansion: { type: "OFFLINE" } },
      {},
    ],
  }),
  probe: async () => ({}),
};

test("connection loss surfaces as UNAVAILABLE and later calls reconnect to a restarted server", async (t) => {
  const dir = await tempDir(t);
  const endpoint = join(dir, "csi.sock");
  const first = await serveCsi({ endpoint, identity });
  const client = connect(t, endpoint);
  assert.equal((await client.identity.getPluginInfo({})).name, "test.csi.k8s.io");
  await first.close();
  await assert.rejects(client.identity.getPluginInfo({}), codeIs(GrpcStatus.UNAVAILABLE));
  await serve(t, { endpoint, identity: { ...identity, getPluginInfo: async () => ({ name: "restarted" }) } });
  let name = "";
  await until(async () => {
    name = await client.identity.getPluginInfo({}).then(
      (info) => info.name,
      () => "",
    );
    return name !== "";
  }, "a successful call after the restart");
  assert.equal(name, "restarted");
});

test("capability helpers return the enum names the driver announces", async (t) => {
  const dir = await tempDir(t);
  const server = await serve(t, {
    endpoint: join(dir, "csi.sock"),
    identity,
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: [{ rpc: { type: "CREATE_DELETE_VOLUME" } }, { rpc: { type: "GET_SNAPSHOT" } }, {}],
      }),
    },
    node: {
      nodeGetCapabilities: async () => ({
        capabilities: [{ rpc: { type: "STAGE_UNSTAGE_VOLUME" } }, { rpc: { type: 2 } }],
      }),
    },
    groupController: {
      groupControllerGetCapabilities: async () => ({
        capabilities: [{ rpc: { type: "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT" } }],
      }),
    },
  });
  const client = connect(t, server.path);
  assert.deepEqual([...(await client.pluginCapabilities())].sort(), [
    "CONTROLLER_SERVICE",
    "GROUP_CONTROLLER_SERVICE",
    "OFFLINE",
  ]);
  assert.deepEqual([...(await client.controllerCapabilities())].sort(), [
    "CREATE_DELETE_VOLUME",
    "GET_SNAPSHOT",
  ]);
  assert.deepEqual([...(await client.nodeCapabilities())].sort(), [
    "GET_VOLUME_STATS",
    "STAGE_UNSTAGE_VOLUME",
  ]);
  assert.deepEqual(
    [...(await client.groupControllerCapabilities())],
    ["CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT"],
  );
});

test("per-call deadlines give DEADLINE_EXCEEDED and abort the handler; a signal cancels a call", async (t) => {
  const dir = await tempDir(t);
  const started: string[] = [];
  const aborted: string[] = [];
  const server = await serve(t, {
    endpoint: join(dir, "csi.sock"),
    identity,
    controller: {
      deleteVolume: async (request, context) => {
        started.push(request.volumeId);
        await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve()));
        aborted.push(request.volumeId);
        return {};
      },
    },
  });
  const client = connect(t, server.path, { timeoutMs: 60_000 });
  await assert.rejects(
    client.controller.deleteVolume({ volumeId: "slow" }, { timeoutMs: 20 }),
    codeIs(GrpcStatus.DEADLINE_EXCEEDED),
  );
  const controller = new AbortController();
  const call = client.controller.deleteVolume({ volumeId: "cancelled" }, { signal: controller.signal });
  const outcome = call.then(
    () => undefined,
    (error: unknown) => error,
  );
  await until(() => started.includes("cancelled"), "the call to reach the handler");
  controller.abort();
  codeIs(GrpcStatus.CANCELLED)(await outcome);
  // The 20ms deadline may pass before the "slow" call even reaches the server (under load it
  // does): what must hold is that every handler that started sees its signal abort.
  await until(
    () => aborted.includes("cancelled") && started.every((id) => aborted.includes(id)),
    "every started handler to see its signal abort",
  );
  assert.deepEqual([...aborted].sort(), [...started].sort());
});

test("onCall observes every finished unary call with its method path, status code and duration", async (t) => {
  const dir = await tempDir(t);
  const server = await serve(t, { endpoint: join(dir, "csi.sock"), identity });
  const calls: [string, number, number][] = [];
  const client = connect(t, server.path, {
    onCall: (method, code, seconds) => calls.push([method, code, seconds]),
  });
  await client.identity.probe({});
  await assert.rejects(client.controller.createVolume({ name: "x" }), codeIs(GrpcStatus.UNIMPLEMENTED));
  assert.deepEqual(
    calls.map(([method, code]) => [method, code]),
    [
      ["/csi.v1.Identity/Probe", GrpcStatus.OK],
      ["/csi.v1.Controller/CreateVolume", GrpcStatus.UNIMPLEMENTED],
    ],
  );
  assert.ok(calls.every(([, , seconds]) => seconds >= 0 && seconds < 60));
});
