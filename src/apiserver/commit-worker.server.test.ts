// The API server's durable writes happen in the storage's commit worker thread: a read is
// answered while a COMMIT is in progress, and a COMMIT that fails fails every write that
// depended on it with a 500 and leaves the served state as it was.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { TestContext } from "node:test";
import { FaultInjector } from "./transport/faults.ts";
import { raw, startTestServer } from "../../test/harness/apiserver.ts";
import type { RawRequest, RawResponse, TestServer } from "../../test/harness/apiserver.ts";
import { until } from "../../test/harness/until.ts";

const CMS = "/api/v1/namespaces/default/configmaps";
/** Bound of every wait below: generous for a loaded machine, far below the hold's own limit. */
const BOUND_MS = 10_000;

async function serverWithFaults(t: TestContext): Promise<{ server: TestServer; faults: FaultInjector }> {
  const faults = new FaultInjector();
  const server = await startTestServer({ faults });
  // Release first: a held COMMIT would keep the store's close waiting.
  t.after(async () => {
    faults.commits.release();
    await server.dispose();
  });
  return { server, faults };
}

/** `promise`, or a failure naming `what` if it does not settle within BOUND_MS. */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${BOUND_MS} ms`)), BOUND_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A request that must be answered within BOUND_MS. */
function bounded(server: TestServer, request: RawRequest, what: string): Promise<RawResponse> {
  return within(raw(server.handle, request), what);
}

function configMap(name: string): string {
  return JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { k: name } });
}

test("GETs and lists are answered while a COMMIT is held in the commit worker", async (t) => {
  const { server, faults } = await serverWithFaults(t);
  const before = await bounded(server, { method: "POST", path: CMS, body: configMap("before") }, "create");
  assert.equal(before.status, 201);

  faults.commits.hold();
  let acknowledged = false;
  const pending = raw(server.handle, { method: "POST", path: CMS, body: configMap("held") }).then(
    (response) => {
      acknowledged = true;
      return response;
    },
  );
  await until(() => faults.commits.heldCommits >= 1, "the COMMIT of the create is held");

  // The COMMIT is in progress (held in the worker); the event loop still serves reads. Were the
  // COMMIT on the main thread, the hold would block it and these would time out.
  const get = await bounded(server, { path: `${CMS}/before` }, "GET while a COMMIT is held");
  assert.equal(get.status, 200);
  assert.equal((get.json()["metadata"] as { name?: string } | undefined)?.name, "before");
  const namespace = await bounded(server, { path: "/api/v1/namespaces/default" }, "GET namespace");
  assert.equal(namespace.status, 200);
  assert.equal(acknowledged, false, "the create is not acknowledged before its COMMIT");
  assert.ok(faults.commits.heldCommits >= 1);

  faults.commits.release();
  const created = await within(pending, "the create after release");
  assert.equal(created.status, 201, created.text);
  const after = await bounded(server, { path: `${CMS}/held` }, "GET after release");
  assert.equal(after.status, 200);
});

test("a failed COMMIT fails every write that built on it with a 500; the state is unchanged", async (t) => {
  const { server, faults } = await serverWithFaults(t);
  const baseline = await bounded(server, { method: "POST", path: CMS, body: configMap("kept") }, "create");
  assert.equal(baseline.status, 201);
  const revision = server.handle.currentRevision();

  // Hold the first batch so the later writes queue behind it, then make that COMMIT fail.
  faults.commits.hold();
  const names = ["f0", "f1", "f2", "f3"];
  const responses = names.map((name, i) =>
    raw(server.handle, { method: "POST", path: CMS, body: configMap(name) }).then((response) => ({
      i,
      response,
    })),
  );
  await until(() => faults.commits.heldCommits >= 1, "the first COMMIT is held");
  await until(() => server.handle.currentRevision() === revision + names.length, "every create applied");
  faults.commits.failNext(1);
  faults.commits.release();

  const answered = await within(Promise.all(responses), "the creates of the failed batch");
  for (const { i, response } of answered) {
    assert.equal(response.status, 500, `${names[i]}: ${response.text}`);
    assert.equal(response.json().reason, "InternalError");
    assert.match(response.json().message ?? "", /storage commit failed, the write was not persisted/);
    assert.doesNotMatch(response.text, /apiserver\.db/, "the database path stays in the server log");
  }
  // Memory went back to the last durable state: none of them is served, the revision is back.
  assert.equal(server.handle.currentRevision(), revision);
  for (const name of names) {
    const get = await bounded(server, { path: `${CMS}/${name}` }, `GET ${name}`);
    assert.equal(get.status, 404, `${name} was never acknowledged`);
  }
  const list = await bounded(server, { path: CMS }, "list");
  const items = (list.json()["items"] as { metadata: { name: string } }[]).map((item) => item.metadata.name);
  assert.deepEqual(items, ["kept"]);

  // The store goes on: the next write commits, and after a restart only acknowledged writes exist.
  const next = await bounded(server, { method: "POST", path: CMS, body: configMap("next") }, "create after");
  assert.equal(next.status, 201, next.text);
  await server.stop();
  const restarted = await server.restart();
  try {
    const relist = await bounded(restarted, { path: CMS }, "list after restart");
    const kept = (relist.json()["items"] as { metadata: { name: string } }[]).map(
      (item) => item.metadata.name,
    );
    assert.deepEqual(kept, ["kept", "next"]);
  } finally {
    await restarted.stop();
  }
});
