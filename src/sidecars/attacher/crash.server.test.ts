// Crash safety with `csikit attacher` as a real child process: SIGKILL while ControllerPublish
// is in flight (the backend finishes the attach after the attacher died) and while
// ControllerUnpublish is in flight; after a restart nothing is leaked: every attachment the
// driver holds belongs to a live VolumeAttachment, and deleted ones are gone.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { GVR, attacherFinalizer } from "../../api/index.ts";
import {
  SCRIPTED,
  createAttachment,
  createCsiNode,
  createVolume,
  getAttachment,
  startCluster,
  startScripted,
  type Cluster,
} from "../../../test/harness/attacher.ts";
import { until } from "../../../test/harness/until.ts";
import { defer } from "../../../test/harness/cleanup.ts";

const MAIN = join(import.meta.dirname, "..", "..", "cli", "main.ts");

interface Child {
  process: ChildProcess;
  stderr: string[];
  /** SIGKILL and wait for the exit (idempotent). */
  kill(): Promise<void>;
}

function startChild(t: TestContext, cluster: Cluster, socket: string): Child {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      "attacher",
      `--csi-address=${socket}`,
      `--kubeconfig=${cluster.kubeconfig}`,
      "--kube-api-qps=1000",
      "--kube-api-burst=1000",
      "--retry-interval-start=100ms",
      "--retry-interval-max=1s",
      "--timeout=30s",
      "-v=2",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const stderr: string[] = [];
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  defer(t, kill);
  return { process: child, stderr, kill };
}

test("kill -9 mid-attach and mid-detach, restart: converges with no leaked attachment", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(client, "pv-k1", SCRIPTED, "vol-k1");
  await createVolume(client, "pv-k2", SCRIPTED, "vol-k2");

  // 1. Publish hangs; the attacher dies with it in flight; the backend then attaches anyway.
  let finishPublish: () => void = () => undefined;
  const publishGate = new Promise<void>((resolve) => (finishPublish = resolve));
  driver.onPublish = (request) => (request.volumeId === "vol-k1" ? publishGate : Promise.resolve());
  let attacher = startChild(t, cluster, driver.path);
  await createAttachment(client, "va-k1", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-k1" });
  await until(() => driver.publishes.length >= 1, "ControllerPublish of vol-k1 in flight", {
    timeoutMs: 60_000,
  });
  const inFlight = await getAttachment(client, "va-k1");
  assert.ok(
    inFlight?.metadata.finalizers?.includes(attacherFinalizer(SCRIPTED)),
    "intent saved before the call",
  );
  await attacher.kill();
  // The pod went away meanwhile: the attach/detach controller deletes the attachment.
  await client.delete(GVR.volumeAttachments, "va-k1");
  finishPublish();
  await until(() => driver.published.get("vol-k1")?.size === 1, "backend attached vol-k1");

  // 2. A second attachment, attached; its ControllerUnpublish hangs and the attacher dies again.
  attacher = startChild(t, cluster, driver.path);
  await until(async () => (await getAttachment(client, "va-k1")) === undefined, "va-k1 detached and gone", {
    timeoutMs: 60_000,
  });
  assert.equal(driver.published.get("vol-k1")?.size, 0, "the late attach was undone");
  await createAttachment(client, "va-k2", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-k2" });
  await until(async () => (await getAttachment(client, "va-k2"))?.status?.attached, "va-k2 attached", {
    timeoutMs: 60_000,
  });
  let finishUnpublish: () => void = () => undefined;
  const unpublishGate = new Promise<void>((resolve) => (finishUnpublish = resolve));
  driver.onUnpublish = () => unpublishGate;
  const before = driver.unpublishes.length;
  await client.delete(GVR.volumeAttachments, "va-k2");
  await until(() => driver.unpublishes.length > before, "ControllerUnpublish of vol-k2 in flight", {
    timeoutMs: 60_000,
  });
  await attacher.kill();
  assert.ok(
    (await getAttachment(client, "va-k2"))?.metadata.finalizers?.length,
    "finalizer held across the crash",
  );
  driver.onUnpublish = undefined;
  finishUnpublish();

  // 3. Restart: everything converges.
  attacher = startChild(t, cluster, driver.path);
  try {
    await until(async () => (await getAttachment(client, "va-k2")) === undefined, "va-k2 gone", {
      timeoutMs: 60_000,
    });
  } catch (error) {
    t.diagnostic(attacher.stderr.join("").slice(-2000));
    throw error;
  }
  for (const [volumeId, nodes] of driver.published)
    assert.equal(nodes.size, 0, `${volumeId} still attached to ${[...nodes].join(",")}`);
  await attacher.kill();
});
