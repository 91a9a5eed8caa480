// The controller runner against the real embedded API server: workers wait for the cache,
// reconcile each key from it (NotFound after a delete), retry failures, and stop cleanly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../base/index.ts";
import { currentReconcile, enqueueHandlers, runController } from "./controller.ts";
import { InformerFactory } from "./informer.ts";
import { ItemExponentialRateLimiter } from "./ratelimit.ts";
import { WorkQueue } from "./workqueue.ts";
import { CONFIGMAPS, sharedTestServer } from "../../test/harness/kube-server.ts";
import type { KubeObject } from "./types.ts";
import { until } from "../../test/harness/until.ts";

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const shared = sharedTestServer();

test("reconcile by key from a synced cache; deletes reconcile to NotFound; failures retry", async () => {
  const clock = new FakeClock();
  for (const name of ["ctl-a", "ctl-b", "ctl-skip"])
    await shared.client.create<ConfigMap>(CONFIGMAPS, {
      metadata: { name, namespace: "default", labels: { group: "ctl" } },
      data: { v: "1" },
    });
  const factory = new InformerFactory({ client: shared.client, freeze: true });
  const informer = factory.informer<ConfigMap>(CONFIGMAPS, { labelSelector: "group=ctl" });
  const queue = new WorkQueue<string>({
    name: "ctl",
    clock,
    rateLimiter: new ItemExponentialRateLimiter({ baseMs: 1000, maxMs: 60_000 }),
  });
  informer.addEventHandler(enqueueHandlers(queue, { filter: (o) => o.metadata?.name !== "ctl-skip" }));
  const seen: string[] = [];
  const ids = new Set<string>();
  let failuresLeft = 1;
  const controller = new AbortController();
  const running = Promise.all([
    factory.start(controller.signal),
    runController(
      {
        name: "test",
        informers: [informer],
        queue,
        workers: 2,
        reconcile(key, context) {
          assert.ok(informer.hasSynced(), "no reconcile before the cache synced");
          const object = informer.store.get(key);
          seen.push(`${key}=${object ? object.data?.v : "NotFound"}`);
          assert.ok(context.logger);
          assert.equal(currentReconcile()?.key, key);
          assert.equal(currentReconcile()?.controller, "test");
          ids.add(currentReconcile()?.reconcileID ?? "");
          if (key === "default/ctl-b" && failuresLeft-- > 0) return Promise.reject(new Error("transient"));
          return Promise.resolve();
        },
      },
      controller.signal,
    ),
  ]);
  try {
    await until(() => seen.length === 2, "the first reconciles");
    assert.deepEqual(seen.sort(), ["default/ctl-a=1", "default/ctl-b=1"]);
    await clock.advance(1000);
    await until(() => seen.length === 3, "the retry of ctl-b");
    assert.equal(seen[2], "default/ctl-b=1");
    await shared.client.delete(CONFIGMAPS, "ctl-a", { namespace: "default" });
    await until(() => seen.length === 4, "the delete");
    assert.equal(seen[3], "default/ctl-a=NotFound");
    await shared.client.delete(CONFIGMAPS, "ctl-skip", { namespace: "default" });
    await shared.client.patch(CONFIGMAPS, "ctl-b", { data: { v: "2" } }, { namespace: "default" });
    await until(() => seen.length === 5, "the update");
    assert.equal(seen[4], "default/ctl-b=2", "filtered objects never reach the queue");
    assert.equal(ids.size, 5, "a fresh reconcileID per reconcile");
    assert.equal(currentReconcile(), undefined);
  } finally {
    controller.abort();
    await running;
  }
  assert.equal(queue.shuttingDown(), true);
});

test("a controller stopped before its caches sync runs nothing and returns", async () => {
  const queue = new WorkQueue<string>();
  const controller = new AbortController();
  let reconciled = 0;
  const never = {
    waitForSync: (signal?: AbortSignal) =>
      new Promise<void>((_, reject) => signal?.addEventListener("abort", () => reject(new Error("stopped")))),
  };
  const running = runController(
    {
      name: "unsynced",
      informers: [never],
      queue,
      workers: 1,
      reconcile: () => {
        reconciled++;
        return Promise.resolve();
      },
    },
    controller.signal,
  );
  queue.add("x");
  controller.abort();
  await running;
  assert.equal(reconciled, 0);
  assert.equal(queue.shuttingDown(), true);
});
