// Attaches are not starved by a burst of detaches (external-attacher#761), and the backlog is
// visible (external-attacher#706): with one worker per lane and every detach hung in the
// driver, a new attachment is still attached — in a single shared queue it would wait behind
// the hung detach forever — while /metrics shows the detaches waiting, their queue's depth
// and the age of its oldest item. The attacher runs as `csikit up` runs it: its own ServiceAccount
// under deploy/rbac/ (nothing it asks is refused). Deterministic: the detaches are held by the
// test, not by time.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR } from "../../api/index.ts";
import {
  SCRIPTED,
  createAttachment,
  createCsiNode,
  createVolume,
  getAttachment,
  runAttacher,
  startScripted,
  type Cluster,
} from "../../../test/harness/attacher.ts";
import { describeEvent, forbidden, startRbacCluster } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";

const DETACHING = 4;

function gauge(metrics: string, name: string, queue: string): number | undefined {
  const line = metrics.split("\n").find((l) => l.startsWith(`${name}{name="${queue}"} `));
  return line === undefined ? undefined : Number(line.split(" ")[1]);
}

test("an attach completes while detaches hang in the driver; the detach backlog shows in the metrics", async (t) => {
  const rbac = await startRbacCluster(t, { admission: [] });
  const cluster: Cluster = {
    server: rbac.server,
    faults: rbac.faults,
    kubeconfig: await rbac.serviceAccountKubeconfig("default", "csi-attacher"),
    client: rbac.admin,
    dir: rbac.dir,
  };
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  const attacher = runAttacher(t, cluster, driver.path, [
    "--worker-threads=1",
    // No deadline fires while the detaches are held: the test, not a timer, decides.
    "--timeout=10m",
    "--http-endpoint=127.0.0.1:0",
  ]);
  for (let i = 0; i < DETACHING; i++) {
    await createVolume(client, `pv-${i}`, SCRIPTED, `vol-${i}`);
    await createAttachment(client, `va-${i}`, { driver: SCRIPTED, nodeName: "worker-1", pvName: `pv-${i}` });
  }
  for (let i = 0; i < DETACHING; i++)
    await until(async () => (await getAttachment(client, `va-${i}`))?.status?.attached, `va-${i} attached`);

  // Every ControllerUnpublish hangs until the test lets go (or the call is cancelled at the end).
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  t.after(() => release());
  driver.onUnpublish = async (_request, context) => {
    await Promise.race([
      released,
      new Promise<void>((resolve) =>
        context.signal.addEventListener("abort", () => resolve(), { once: true }),
      ),
    ]);
  };
  for (let i = 0; i < DETACHING; i++) await client.delete(GVR.volumeAttachments, `va-${i}`);
  await until(() => driver.unpublishes.length === 1, "the one detach worker busy in the driver");
  const url = await until(() => attacher.url, "http endpoint");
  // The rest of the burst waits in the detach queue, visibly.
  await until(async () => {
    const metrics = await (await fetch(`${url}/metrics`)).text();
    return gauge(metrics, "workqueue_depth", "csi-attacher-va-detach") === DETACHING - 1 || undefined;
  }, "detach backlog of 3 in workqueue_depth");

  await createVolume(client, "pv-new", SCRIPTED, "vol-new");
  await createAttachment(client, "va-new", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-new" });
  const attached = await until(async () => {
    const va = await getAttachment(client, "va-new");
    return va?.status?.attached ? va : undefined;
  }, "va-new attached while the detaches hang");
  assert.deepEqual(attached.status?.attachmentMetadata, { device: "/dev/scripted/vol-new" });
  assert.equal(driver.unpublishes.length, 1, "no second detach started: its worker is still held");

  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.equal(gauge(metrics, "workqueue_depth", "csi-attacher-va-detach"), DETACHING - 1);
  assert.equal(gauge(metrics, "workqueue_depth", "csi-attacher-va"), 0);
  assert.ok(
    (gauge(metrics, "workqueue_oldest_waiting_item_seconds", "csi-attacher-va-detach") ?? 0) > 0,
    "the oldest waiting detach has an age",
  );
  assert.ok(
    (gauge(metrics, "workqueue_longest_running_processor_seconds", "csi-attacher-va-detach") ?? 0) > 0,
    "the hung detach shows as a long-running processor",
  );

  // Let the detaches go: all of them finish, one at a time on the one worker.
  release();
  for (let i = 0; i < DETACHING; i++)
    await until(async () => (await getAttachment(client, `va-${i}`)) === undefined, `va-${i} gone`);
  assert.equal(driver.published.get("vol-new")?.size, 1, "the new attachment is untouched");
  assert.deepEqual(
    forbidden(rbac.audit, "system:serviceaccount:default:csi-attacher").map(describeEvent),
    [],
  );
});
