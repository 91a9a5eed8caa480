// Retries never faster than their backoff (issue 24 §1): a claim whose ControllerExpandVolume
// fails for good gets at most log2(window/1s)+2 calls in a window with the default
// --retry-interval-start/--retry-interval-max, whatever its own status writes (conditions,
// allocatedResourceStatuses) cause; a new request from the user is tried at once, not after the
// backoff. Real time, the real API server and a scripted driver over gRPC on a Unix socket.

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import {
  CsiError,
  GrpcStatus,
  STUB,
  boundClaim,
  claimStatus,
  runResizer,
  setRequest,
  startCluster,
  startResizeStub,
} from "../../../test/harness/resizer.ts";
import { until } from "../../../test/harness/until.ts";

const DEFAULT_INTERVALS = ["--retry-interval-start=1s", "--retry-interval-max=5m"];
const WINDOW_MS = 4000;
/** log2(4s / 1s) + 2 */
const ALLOWED = 4;

test("a ControllerExpandVolume that fails for good is retried with backoff; a new request goes at once", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  const calls: number[] = [];
  stub.onExpand = async (request) => {
    if (request.capacityRange?.requiredBytes !== String(10 * 1024 * 1024)) return;
    calls.push(Date.now());
    throw new CsiError(GrpcStatus.INTERNAL, "backend says no");
  };
  await boundClaim(cluster, { name: "f", driver: STUB, handle: "vol-f" });
  runResizer(t, cluster, stub.server.path, DEFAULT_INTERVALS);
  await setRequest(cluster, "f", "10Mi");
  await until(() => calls.length > 0, "the first ControllerExpandVolume");
  await delay(WINDOW_MS);
  const count = calls.filter((at) => at - calls[0]! <= WINDOW_MS).length;
  assert.ok(
    count <= ALLOWED,
    `${count} ControllerExpandVolume calls in ${WINDOW_MS} ms; backoff allows ${ALLOWED}`,
  );
  assert.ok(count >= 2, `still retried: ${count} calls`);
  // Right after a failure the next retry is 2^(failures-1) s (8s or more) away; the user's
  // smaller request does not wait for it.
  const failures = calls.length;
  await until(() => calls.length > failures, "the next retry", { timeoutMs: 30_000 });
  const nextRetryAt = calls.at(-1)! + 2 ** (calls.length - 1) * 1000;
  await setRequest(cluster, "f", "5Mi");
  await until(async () => (await claimStatus(cluster, "f")).capacity?.storage === "5Mi", "capacity 5Mi");
  assert.ok(Date.now() < nextRetryAt, "the new request was not held behind the failed one's backoff");
});
