// EventRecorder against the real embedded API server: the Event written, repeats folded into
// count/lastTimestamp, similar events aggregated, the spam filter, a vanished Event re-created,
// rejected writes not retried, and a bounded queue that never blocks or throws.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../base/index.ts";
import { CORE_EVENTS, EventRecorder, objectReference, type CoreEvent } from "./events.ts";
import { CONFIGMAPS, startTestServer, type TestServer } from "../../test/harness/kube-server.ts";
import type { KubeClient } from "./client.ts";
import type { KubeObject } from "./types.ts";

let env: TestServer;
let client: KubeClient;
before(async () => {
  env = await startTestServer();
  client = env.client();
});
after(async () => {
  await env.stop();
});

async function subject(name: string): Promise<KubeObject> {
  return client.create<KubeObject>(CONFIGMAPS, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "default" },
  });
}

async function eventsFor(name: string): Promise<CoreEvent[]> {
  const list = await client.list<CoreEvent>(CORE_EVENTS, { namespace: "default" });
  return list.items.filter((e) => e.involvedObject.name === name);
}

function started(recorder: EventRecorder, t: { after: (fn: () => Promise<void>) => void }): void {
  const controller = new AbortController();
  const running = recorder.start(controller.signal);
  t.after(async () => {
    controller.abort();
    await running;
  });
}

test("an Event carries the upstream fields; an identical repeat patches count and lastTimestamp", async (t) => {
  const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5));
  const recorder = new EventRecorder({ client, component: "csi-provisioner", host: "node-1", clock });
  started(recorder, t);
  const object = await subject("ev-basic");
  recorder.event(object, "Normal", "Provisioning", "External provisioner is provisioning volume");
  await recorder.flush();
  let [event, ...rest] = await eventsFor("ev-basic");
  assert.equal(rest.length, 0);
  assert.ok(event);
  assert.match(event.metadata?.name ?? "", /^ev-basic\.[0-9a-f]+$/);
  assert.equal(event.metadata?.namespace, "default");
  assert.deepEqual(event.involvedObject, objectReference(object));
  assert.equal(event.involvedObject.kind, "ConfigMap");
  assert.equal(event.involvedObject.uid, object.metadata?.uid);
  assert.deepEqual(
    [event.type, event.reason, event.message, event.count],
    ["Normal", "Provisioning", "External provisioner is provisioning volume", 1],
  );
  assert.deepEqual(event.source, { component: "csi-provisioner", host: "node-1" });
  assert.equal(event.reportingComponent, "csi-provisioner");
  assert.equal(event.reportingInstance, "node-1");
  assert.equal(event.firstTimestamp, "2026-01-02T03:04:05Z");

  await clock.advance(7000);
  recorder.event(object, "Normal", "Provisioning", "External provisioner is provisioning volume");
  await recorder.flush();
  [event, ...rest] = await eventsFor("ev-basic");
  assert.equal(rest.length, 0, "no second Event");
  assert.equal(event?.count, 2);
  assert.equal(event?.firstTimestamp, "2026-01-02T03:04:05Z");
  assert.equal(event?.lastTimestamp, "2026-01-02T03:04:12Z");
  assert.equal(recorder.written, 2);
});

test("ten similar events with different messages fold into one combined Event", async (t) => {
  const recorder = new EventRecorder({ client, component: "csi-attacher", clock: new FakeClock() });
  started(recorder, t);
  const object = await subject("ev-similar");
  for (let i = 0; i < 12; i++) recorder.event(object, "Warning", "AttachFailed", `attempt ${i} failed`);
  await recorder.flush();
  const events = await eventsFor("ev-similar");
  assert.equal(events.length, 10, "nine distinct Events, then one combined");
  const combined = events.filter((e) => e.message.startsWith("(combined from similar events): "));
  assert.equal(combined.length, 1);
  assert.equal(combined[0]?.count, 3);
  assert.equal(combined[0]?.message, "(combined from similar events): attempt 11 failed");
});

test("spam filter: 25 events per object, then one per 5 minutes", async (t) => {
  const clock = new FakeClock();
  const recorder = new EventRecorder({ client, component: "csi-resizer", clock });
  started(recorder, t);
  const object = await subject("ev-spam");
  for (let i = 0; i < 30; i++) recorder.event(object, "Normal", "Resizing", "resizing");
  await recorder.flush();
  assert.equal(recorder.filtered, 5);
  assert.equal((await eventsFor("ev-spam"))[0]?.count, 25);
  await clock.advance(300_000);
  recorder.event(object, "Normal", "Resizing", "resizing");
  recorder.event(object, "Normal", "Resizing", "resizing");
  await recorder.flush();
  assert.equal(recorder.filtered, 6);
  assert.equal((await eventsFor("ev-spam"))[0]?.count, 26);
});

test("a repeat of an Event deleted meanwhile creates a new one; rejected writes are not retried", async (t) => {
  const recorder = new EventRecorder({ client, component: "csi-snapshotter", clock: new FakeClock() });
  started(recorder, t);
  recorder.event({ kind: "PersistentVolume", apiVersion: "v1", name: "pv-1" }, "Normal", "Deleted", "gone");
  await recorder.flush();
  const [first] = await eventsFor("pv-1");
  assert.equal(first?.metadata?.namespace, "default", "cluster-scoped objects' events go to default");
  await client.delete(CORE_EVENTS, first.metadata.name!, { namespace: "default" });
  recorder.event({ kind: "PersistentVolume", apiVersion: "v1", name: "pv-1" }, "Normal", "Deleted", "gone");
  await recorder.flush();
  const [second, ...rest] = await eventsFor("pv-1");
  assert.equal(rest.length, 0);
  assert.notEqual(second?.metadata?.name, first?.metadata?.name);
  assert.equal(second?.count, 1);

  env.faults.failNext({ verb: "create", resource: "events", code: 500 });
  const before = env.faults.fired;
  recorder.event({ kind: "PersistentVolume", apiVersion: "v1", name: "pv-2" }, "Warning", "Failed", "x");
  await recorder.flush();
  assert.equal(env.faults.fired - before, 1);
  assert.equal((await eventsFor("pv-2")).length, 0, "server rejection: dropped, not retried");
});

test("event() never blocks or throws: a full queue drops and counts", () => {
  const recorder = new EventRecorder({ client, component: "c", queueSize: 3 });
  for (let i = 0; i < 5; i++) recorder.event({ name: `x${i}` }, "Normal", "R", "m");
  assert.equal(recorder.dropped, 2);
  const hostile = new Proxy(
    {},
    {
      has: () => {
        throw new Error("hostile object");
      },
    },
  );
  assert.doesNotThrow(() => recorder.event(hostile, "Normal", "R", "m"));
});
