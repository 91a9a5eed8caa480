// A watcher that stops reading must not make the server buffer every later change: past
// watchMaxPendingBytes its watch is cut (as kube-apiserver ends an unresponsive watcher), the
// memory it held is freed, and the other watchers and requests carry on.

import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import type { IncomingMessage } from "node:http";
import { test } from "node:test";
import { raw, startTestServer } from "../../../test/harness/apiserver.ts";
import { pendingWatchBytes, terminatedWatcherCount } from "./watch.ts";

const LIMIT = 1024 * 1024;
const VALUE_BYTES = 200 * 1024;
const UPDATES = 150; // ~30 MB of events: far beyond the limit plus what the kernel's socket buffers hold

test(
  "a stalled watcher is cut once its unsent bytes pass the bound; pending memory stays bounded",
  { timeout: 120_000 },
  async (t) => {
    const server = await startTestServer({ watchMaxPendingBytes: LIMIT });
    t.after(() => server.dispose());
    const { handle } = server;
    const ns = "stall";
    assert.equal(
      (
        await raw(handle, {
          method: "POST",
          path: "/api/v1/namespaces",
          body: JSON.stringify({ metadata: { name: ns } }),
        })
      ).status,
      201,
    );
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const body = (generation: number): string =>
      JSON.stringify({
        metadata: { name: "big" },
        data: { value: "x".repeat(VALUE_BYTES), generation: String(generation) },
      });
    const created = await raw(handle, { method: "POST", path, body: body(0) });
    assert.equal(created.status, 201);
    const rv = String(
      created.json()["metadata"] &&
        (created.json()["metadata"] as { resourceVersion: string }).resourceVersion,
    );

    const openWatch = (): Promise<IncomingMessage> =>
      new Promise((resolve, reject) => {
        const req = httpsRequest(
          `${handle.url}${path}?watch=1&resourceVersion=${rv}`,
          { headers: { Authorization: `Bearer ${handle.adminToken}` }, ca: handle.caCertPem },
          resolve,
        );
        req.on("error", reject);
        t.after(() => req.destroy());
        req.end();
      });
    // The stalled watcher reads nothing; the healthy one reads everything.
    const stalled = await openWatch();
    stalled.pause();
    // The cut reaches the client as an aborted response: expected here.
    stalled.on("error", () => {});
    let stalledEnded = false;
    stalled.socket.on("close", () => (stalledEnded = true));
    const healthy = await openWatch();
    healthy.on("error", () => {}); // the server's stop cuts it at the end
    let healthyEvents = 0;
    let healthyTail = "";
    healthy.setEncoding("utf8");
    healthy.on("data", (chunk: string) => {
      const lines = (healthyTail + chunk).split("\n");
      healthyTail = lines.pop() ?? "";
      healthyEvents += lines.length;
    });

    const terminatedBefore = terminatedWatcherCount();
    let maxPending = 0;
    let lastButOne = "";
    for (let generation = 1; generation <= UPDATES; generation++) {
      const updated = await raw(handle, { method: "PUT", path: `${path}/big`, body: body(generation) });
      assert.equal(updated.status, 200);
      if (generation === UPDATES - 1)
        lastButOne = (updated.json()["metadata"] as { resourceVersion: string }).resourceVersion;
      maxPending = Math.max(maxPending, pendingWatchBytes());
    }
    // One event of slack: the write that crosses the bound is the last one the watch buffers.
    const eventBytes = VALUE_BYTES + 4096;
    assert.ok(
      maxPending <= 2 * (LIMIT + eventBytes),
      `pending watch bytes reached ${maxPending}, bound ${LIMIT} per watch`,
    );
    assert.equal(terminatedWatcherCount(), terminatedBefore + 1, "exactly the stalled watch was ended");

    // The healthy watcher got every change; the stalled one's stream was cut by the server.
    const deadline = Date.now() + 30_000;
    while (healthyEvents < UPDATES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(healthyEvents, UPDATES);
    stalled.resume();
    stalled.on("data", () => {});
    while (!stalledEnded && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(stalledEnded, "the server closed the stalled watch");
    assert.ok(pendingWatchBytes() < LIMIT, "the cut watch's buffers were freed");

    // A new watch from a resourceVersion the client saw works (what a client does next).
    const again = await raw(handle, {
      path: `${path}?watch=1&resourceVersion=${lastButOne}&timeoutSeconds=1`,
    });
    assert.equal(again.status, 200);
    assert.equal(again.text.trim().split("\n").length, 1);
  },
);
