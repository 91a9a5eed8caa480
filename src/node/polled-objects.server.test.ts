// PolledObjects against the real API server, as a node identity under Node,RBAC: a key asked
// for is fetched with one GET (no list, no watch — the Node authorizer refuses those), changes
// arrive within a refresh period and call onChange, absence is known after the first answer.

import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type PersistentVolumeClaim } from "../api/index.ts";
import { realClock, silentLogger } from "../base/index.ts";
import { nodeClient } from "../../test/harness/kube-server.ts";
import { testServer } from "../../test/harness/node.ts";
import { until } from "../../test/harness/until.ts";
import { PolledObjects } from "./polled-objects.ts";

test("a claim of the node's pod: fetched by GET on first ask, refreshed, absent claims known as absent", async (t) => {
  const api = await testServer(t);
  const admin = api.client();
  await admin.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    metadata: { name: "data", namespace: "default" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Gi" } },
      storageClassName: "",
    },
  });
  await admin.create(GVR.pods, {
    metadata: { name: "app", namespace: "default" },
    spec: {
      nodeName: "node-a",
      containers: [{ name: "c", image: "busybox" }],
      volumes: [
        { name: "d", persistentVolumeClaim: { claimName: "data" } },
        { name: "m", persistentVolumeClaim: { claimName: "missing" } },
      ],
    },
  });
  let changes = 0;
  const claims = new PolledObjects<PersistentVolumeClaim>({
    client: nodeClient(admin, "node-a"),
    gvr: GVR.persistentVolumeClaims,
    clock: realClock,
    logger: silentLogger,
    refreshMs: 100,
    onChange: () => changes++,
  });
  const controller = new AbortController();
  const running = claims.run(controller.signal);
  t.after(async () => {
    controller.abort();
    await running;
  });

  assert.equal(claims.store.get("default/data"), undefined, "not fetched yet");
  assert.equal(claims.store.get("default/missing"), undefined);
  assert.equal(claims.pending(), true);
  const claim = await until(() => claims.store.get("default/data"), "the claim fetched");
  assert.equal(claim.metadata?.name, "data");
  await until(() => !claims.pending(), "both keys answered");
  assert.equal(claims.store.get("default/missing"), undefined, "absent after its 404");
  const seen = changes;
  assert.ok(seen >= 1);

  await admin.patch(
    GVR.persistentVolumeClaims,
    "data",
    { metadata: { labels: { changed: "yes" } } },
    { namespace: "default" },
  );
  await until(
    () => claims.store.get("default/data")?.metadata?.labels?.changed === "yes",
    "the change seen within a refresh",
  );
  assert.ok(changes > seen, "onChange called for the change");
});
