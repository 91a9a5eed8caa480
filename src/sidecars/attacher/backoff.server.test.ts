// Retries never faster than their backoff (issue 24 §1): an attachment whose ControllerPublish
// (or ControllerUnpublish) fails for good gets at most log2(window/1s)+2 calls in a window with
// the default --retry-interval-start/--retry-interval-max, whatever its own writes (finalizers,
// attachError/detachError) cause; its Warning event is one Event whose count grows. Real time,
// the real API server and a scripted driver over gRPC on a Unix socket.

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { EVENT_REASONS, GVR, type CoreEvent } from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  SCRIPTED,
  createAttachment,
  createCsiNode,
  createVolume,
  getAttachment,
  runAttacher,
  startCluster,
  startScripted,
  type Cluster,
} from "../../../test/harness/attacher.ts";
import { until } from "../../../test/harness/until.ts";

const DEFAULT_INTERVALS = ["--retry-interval-start=1s", "--retry-interval-max=5m"];
const WINDOW_MS = 4000;
/** log2(4s / 1s) + 2 */
const ALLOWED = 4;

async function eventsOf(cluster: Cluster, name: string, reason: string): Promise<CoreEvent[]> {
  const list = await cluster.client.list<CoreEvent>(GVR.events, { namespace: "default" });
  return list.items.filter((e) => e.involvedObject.name === name && e.reason === reason);
}

/** Calls made within the window that starts at the first one. */
function inWindow(calls: readonly number[]): number {
  return calls.filter((at) => at - calls[0]! <= WINDOW_MS).length;
}

test("a ControllerPublish that fails for good is retried with backoff, not on the attacher's own writes", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  const calls: number[] = [];
  driver.onPublish = () => {
    calls.push(Date.now());
    return Promise.reject(new CsiError(GrpcStatus.NOT_FOUND, "no such volume"));
  };
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(client, "pv-a", SCRIPTED, "vol-a");
  runAttacher(t, cluster, driver.path, DEFAULT_INTERVALS);
  await createAttachment(client, "va-a", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-a" });
  await until(() => calls.length > 0, "the first ControllerPublish");
  await delay(WINDOW_MS);
  const count = inWindow(calls);
  assert.ok(
    count <= ALLOWED,
    `${count} ControllerPublish calls in ${WINDOW_MS} ms; backoff allows ${ALLOWED}`,
  );
  assert.ok(count >= 2, `still retried: ${count} calls`);
  await until(async () => {
    const found = await eventsOf(cluster, "va-a", EVENT_REASONS.failedAttachVolume.key);
    return found.length === 1 && (found[0]?.count ?? 0) > 1;
  }, "one FailedAttachVolume event with count > 1");
});

test("a ControllerUnpublish that fails for good is retried with backoff; deleting a failing attachment detaches at once", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(client, "pv-b", SCRIPTED, "vol-b");
  runAttacher(t, cluster, driver.path, DEFAULT_INTERVALS);
  const publishes: number[] = [];
  driver.onPublish = () => {
    publishes.push(Date.now());
    return Promise.reject(new CsiError(GrpcStatus.INTERNAL, "backend down"));
  };
  await createAttachment(client, "va-b", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-b" });
  // Let the attach back off for a while (next retry 4s or more away), then delete it.
  await until(() => publishes.length >= 3, "three ControllerPublish failures", { timeoutMs: 30_000 });
  const calls: number[] = [];
  driver.onUnpublish = () => {
    calls.push(Date.now());
    return Promise.reject(new CsiError(GrpcStatus.FAILED_PRECONDITION, "volume busy"));
  };
  // After three failures the attach's next retry is 4s after the last one.
  const attachRetryAt = publishes.at(-1)! + 4000;
  await client.delete(GVR.volumeAttachments, "va-b");
  await until(() => calls.length > 0, "the first ControllerUnpublish", { timeoutMs: 20_000 });
  assert.ok(
    calls[0]! < attachRetryAt - 500,
    `the deletion was held behind the attach backoff: unpublish ${calls[0]! - publishes.at(-1)!} ms after the last publish`,
  );
  await delay(WINDOW_MS);
  const count = inWindow(calls);
  assert.ok(
    count <= ALLOWED,
    `${count} ControllerUnpublish calls in ${WINDOW_MS} ms; backoff allows ${ALLOWED}`,
  );
  assert.ok((await getAttachment(client, "va-b"))?.metadata.finalizers?.length, "finalizer held");
});
