// --resync-period: the informers hand every cached claim to the handlers again, so every claim is
// re-enqueued periodically (upstream's shared informer factory resync) — and a claim whose resize
// is finished gets no second ControllerExpandVolume from it.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  STUB,
  boundClaim,
  claimStatus,
  runResizer,
  setRequest,
  startCluster,
  startResizeStub,
} from "../../../test/harness/resizer.ts";
import { until } from "../../../test/harness/until.ts";

const ADDS = /workqueue_adds_total\{name="resize-stub\.csi\.csikit\.io-pvc"\} (\d+)/;

async function adds(url: string): Promise<number> {
  const match = ADDS.exec(await (await fetch(`${url}/metrics`)).text());
  assert.ok(match, "workqueue_adds_total of the claim queue is exported");
  return Number(match[1]);
}

test("--resync-period re-enqueues every claim periodically without expanding a finished one again", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  await boundClaim(cluster, { name: "a", driver: STUB, handle: "vol-a" });
  await boundClaim(cluster, { name: "b", driver: STUB, handle: "vol-b" });
  const resizer = runResizer(t, cluster, stub.server.path, [
    "--resync-period=200ms",
    "--http-endpoint=127.0.0.1:0",
  ]);
  await setRequest(cluster, "a", "2Mi");
  await until(async () => (await claimStatus(cluster, "a")).capacity?.storage === "2Mi", "claim a at 2Mi");
  const url = await until(() => resizer.url, "endpoint");
  const before = await adds(url);
  // No object changes from here on: only the resync can add the two claims again, each period.
  const after = await until(async () => {
    const now = await adds(url);
    return now >= before + 6 ? now : undefined;
  }, "resyncs to add both claims again, several times");
  assert.ok(after >= before + 6);
  assert.equal(stub.expands.length, 1, "one ControllerExpandVolume in all");
  assert.equal((await claimStatus(cluster, "a")).capacity?.storage, "2Mi");
  assert.equal((await claimStatus(cluster, "b")).capacity?.storage, "1Mi");
});
