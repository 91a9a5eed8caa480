// The --reconcile-sync loop against a scripted driver with LIST_VOLUMES_PUBLISHED_NODES: a
// volume detached behind Kubernetes' back is published again, ListVolumes is paged with
// --max-entries, and a driver without the capability is never listed.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  SCRIPTED,
  createAttachment,
  createCsiNode,
  createVolume,
  getAttachment,
  runAttacher,
  startCluster,
  startScripted,
} from "../../../test/harness/attacher.ts";
import { until } from "../../../test/harness/until.ts";

test("a volume detached out of band is published again; ListVolumes is paged by --max-entries", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir);
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  for (const n of [1, 2, 3]) await createVolume(client, `pv-r${n}`, SCRIPTED, `vol-r${n}`);
  runAttacher(t, cluster, driver.path, ["--reconcile-sync=200ms", "--max-entries=1"]);
  for (const n of [1, 2, 3])
    await createAttachment(client, `va-r${n}`, {
      driver: SCRIPTED,
      nodeName: "worker-1",
      pvName: `pv-r${n}`,
    });
  for (const n of [1, 2, 3])
    await until(async () => (await getAttachment(client, `va-r${n}`))?.status?.attached, `va-r${n} attached`);
  const publishesOf = (volumeId: string): number =>
    driver.publishes.filter((r) => r.volumeId === volumeId).length;
  // A pass that read the informer before the attached status reached it may publish an attached
  // volume once more (a forced, idempotent sync, as upstream): count from two whole passes later.
  const pagesAttached = driver.listPages.length;
  await until(() => driver.listPages.length >= pagesAttached + 6, "two reconcile passes after attach");
  const r1Publishes = publishesOf("vol-r1");
  const r2Publishes = publishesOf("vol-r2");
  // The backend loses the attachment of vol-r2 (an out-of-band detach).
  driver.published.get("vol-r2")!.clear();
  await until(() => driver.published.get("vol-r2")?.has("scripted-node-1"), "vol-r2 published again");
  assert.equal(publishesOf("vol-r2"), r2Publishes + 1);
  assert.equal(publishesOf("vol-r1"), r1Publishes, "agreeing attachments are left alone");
  // Three volumes, one per page.
  assert.ok(driver.listPages.length >= 3);
  assert.ok(driver.listPages.every((maxEntries) => maxEntries === 1));
  assert.equal((await getAttachment(client, "va-r2"))?.status?.attached, true);
});

test("without LIST_VOLUMES_PUBLISHED_NODES the driver is never listed", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, {
    capabilities: ["PUBLISH_UNPUBLISH_VOLUME", "LIST_VOLUMES"],
  });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(client, "pv-n", SCRIPTED, "vol-n");
  runAttacher(t, cluster, driver.path, ["--reconcile-sync=50ms"]);
  await createAttachment(client, "va-n", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-n" });
  await until(async () => (await getAttachment(client, "va-n"))?.status?.attached, "va-n attached");
  driver.published.get("vol-n")!.clear();
  // A second attachment synced after the first proves the loop had time to run, had it existed.
  await createVolume(client, "pv-m", SCRIPTED, "vol-m");
  await createAttachment(client, "va-m", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-m" });
  await until(async () => (await getAttachment(client, "va-m"))?.status?.attached, "va-m attached");
  assert.equal(driver.listPages.length, 0);
});
