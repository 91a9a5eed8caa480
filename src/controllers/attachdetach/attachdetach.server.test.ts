// The attach/detach controller against the real embedded API server: VolumeAttachment name and
// fields, waiting for the attacher, attachError events, node.status.volumesAttached, detach
// gated by volumesInUse, forced detach after the maximum wait on a not-Ready node, drivers
// without attach, inline volumes, unmanaged nodes, and rebuilding after a restart. The test
// plays the attacher, the node agent and the PV controller by writing objects.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { GVR, type VolumeAttachment } from "../../api/index.ts";
import {
  DRIVER,
  attachment,
  boundVolume,
  createNode,
  deletePod,
  podEvent,
  scheduledPod,
  setAttached,
  setVolumesInUse,
  startEnv,
  volumesAttached,
} from "../../../test/harness/attachdetach.ts";
import { uniqueVolumeName, volumeAttachmentName } from "./index.ts";
import { until } from "../../../test/harness/until.ts";

const expectedName = (handle: string, node: string): string =>
  "csi-" + createHash("sha256").update(`${handle}${DRIVER}${node}`).digest("hex");

test("attach: VolumeAttachment named and filled as upstream, wait for attached, report in node status", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-a");
  await boundVolume(client, "data", "handle-1");
  run();
  await scheduledPod(client, "app", "node-a", ["data"]);
  const name = expectedName("handle-1", "node-a");
  assert.equal(volumeAttachmentName("handle-1", DRIVER, "node-a"), name);
  const created = await until(() => attachment(client, name), "the VolumeAttachment");
  assert.deepEqual(created.spec, {
    attacher: DRIVER,
    source: { persistentVolumeName: "pv-data" },
    nodeName: "node-a",
  });
  assert.deepEqual(
    await volumesAttached(client, "node-a"),
    [],
    "not reported before the attacher says attached",
  );

  // The attacher fails first: the pod gets FailedAttachVolume with the attacher's message.
  await setAttached(client, name, {
    attached: false,
    attachError: { message: "rpc error: code = Internal desc = boom" },
  });
  const failed = await podEvent(client, "app", "FailedAttachVolume");
  assert.equal(
    failed.message,
    'AttachVolume.Attach failed for volume "pv-data" : rpc error: code = Internal desc = boom',
  );
  assert.equal(failed.source?.component, "attachdetach-controller");
  // Then succeeds: reported with an empty device path, and an event.
  await setAttached(client, name, { attached: true, attachmentMetadata: { dev: "x" } });
  const unique = uniqueVolumeName(DRIVER, "handle-1");
  assert.equal(unique, `kubernetes.io/csi/${DRIVER}^handle-1`);
  await until(
    async () => ((await volumesAttached(client, "node-a")).length === 1 ? true : undefined),
    "volumesAttached",
  );
  assert.deepEqual(await volumesAttached(client, "node-a"), [`${unique}|`]);
  const succeeded = await podEvent(client, "app", "SuccessfulAttachVolume");
  assert.equal(succeeded.message, 'AttachVolume.Attach succeeded for volume "pv-data" ');
  // The controller never modified the attachment (only the attacher wrote its status).
  const current = await attachment(client, name);
  assert.deepEqual(current?.spec, created.spec);
  assert.deepEqual(current?.metadata?.finalizers, undefined);
});

test("detach waits for volumesInUse to drop the volume, then deletes the attachment", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-a");
  await boundVolume(client, "data", "h-data");
  await boundVolume(client, "marker", "h-marker");
  run({ workers: 1 });
  await scheduledPod(client, "app", "node-a", ["data"]);
  const name = expectedName("h-data", "node-a");
  await setAttached(client, name, { attached: true });
  const unique = uniqueVolumeName(DRIVER, "h-data");
  await setVolumesInUse(client, "node-a", [unique]);
  await until(
    async () => ((await volumesAttached(client, "node-a")).length === 1 ? true : undefined),
    "reported",
  );

  await deletePod(client, "app");
  // A later change on the same node (the pod informer delivers in order) proves the controller
  // has looked at the node after the deletion.
  await scheduledPod(client, "marker", "node-a", ["marker"]);
  await until(() => attachment(client, expectedName("h-marker", "node-a")), "the marker's attachment");
  const stillThere = await attachment(client, name);
  assert.ok(
    stillThere && !stillThere.metadata?.deletionTimestamp,
    "no detach while the node uses the volume",
  );
  assert.ok((await volumesAttached(client, "node-a")).includes(`${unique}|`));

  // The node agent unmounts: detach.
  await setVolumesInUse(client, "node-a", []);
  await until(
    async () => ((await attachment(client, name)) === undefined ? true : undefined),
    "the attachment deleted",
  );
  await until(
    async () => ((await volumesAttached(client, "node-a")).length === 0 ? true : undefined),
    "volumesAttached emptied",
  );
});

test("a not-Ready node that never unmounts is force-detached after the maximum wait", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-lost", { ready: false });
  await boundVolume(client, "data", "h-lost");
  run({ maxWaitForUnmountMs: 300 });
  await scheduledPod(client, "app", "node-lost", ["data"]);
  const name = expectedName("h-lost", "node-lost");
  await setAttached(client, name, { attached: true });
  await setVolumesInUse(client, "node-lost", [uniqueVolumeName(DRIVER, "h-lost")]);
  await until(
    async () => ((await volumesAttached(client, "node-lost")).length === 1 ? true : undefined),
    "reported",
  );
  const deletedAt = Date.now();
  await deletePod(client, "app");
  await until(
    async () => ((await attachment(client, name)) === undefined ? true : undefined),
    "the forced detach",
  );
  assert.ok(Date.now() - deletedAt >= 300, "not before the maximum wait");
  assert.deepEqual(await volumesAttached(client, "node-lost"), []);
});

test("no attachment for attachRequired: false drivers, inline volumes or unmanaged nodes", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-a");
  await createNode(client, "plain", { managed: false });
  await client.create(GVR.csiDrivers, {
    metadata: { name: "noattach.csi.k8s.io" },
    spec: { attachRequired: false },
  });
  await boundVolume(client, "no-attach", "h-na", "noattach.csi.k8s.io");
  await boundVolume(client, "on-plain", "h-plain");
  await boundVolume(client, "marker", "h-marker");
  // One worker: node keys are handled in the order their changes arrived.
  run({ workers: 1 });
  await scheduledPod(client, "plain-pod", "plain", ["on-plain"]);
  await scheduledPod(
    client,
    "app",
    "node-a",
    ["no-attach"],
    [{ name: "inline", csi: { driver: DRIVER, volumeAttributes: { size: "1Mi" } } }],
  );
  await scheduledPod(client, "marker", "node-a", ["marker"]);
  await until(() => attachment(client, expectedName("h-marker", "node-a")), "the marker's attachment");
  const all = await client.list<VolumeAttachment>(GVR.volumeAttachments);
  assert.deepEqual(
    all.items.map((va) => va.metadata?.name),
    [expectedName("h-marker", "node-a")],
  );
});

test("after a restart: rebuilt from attachments and pods; what nothing needs is detached", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-a");
  await boundVolume(client, "keep", "h-keep");
  await boundVolume(client, "gone", "h-gone");
  const first = run();
  await scheduledPod(client, "keeper", "node-a", ["keep"]);
  await scheduledPod(client, "leaver", "node-a", ["gone"]);
  const keep = expectedName("h-keep", "node-a");
  const gone = expectedName("h-gone", "node-a");
  await setAttached(client, keep, { attached: true });
  await setAttached(client, gone, { attached: true });
  await until(
    async () => ((await volumesAttached(client, "node-a")).length === 2 ? true : undefined),
    "both reported",
  );
  await first.stop();

  // While it is down: one pod goes away.
  await client.request({
    method: "DELETE",
    path: "/api/v1/namespaces/default/pods/leaver",
    query: { gracePeriodSeconds: 0 },
  });
  run();
  await until(
    async () => ((await attachment(client, gone)) === undefined ? true : undefined),
    "the unneeded attachment detached",
  );
  await until(
    async () => ((await volumesAttached(client, "node-a")).length === 1 ? true : undefined),
    "volumesAttached rebuilt",
  );
  assert.deepEqual(await volumesAttached(client, "node-a"), [`${uniqueVolumeName(DRIVER, "h-keep")}|`]);
  assert.ok(await attachment(client, keep), "the needed attachment stays");
});

test("an attacher that never answers: FailedAttachVolume after the attach timeout", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-a");
  await boundVolume(client, "slow", "h-slow");
  run({ attachTimeoutMs: 200 });
  await scheduledPod(client, "app", "node-a", ["slow"]);
  const event = await podEvent(client, "app", "FailedAttachVolume");
  assert.equal(
    event.message,
    `AttachVolume.Attach failed for volume "pv-slow" : timed out waiting for external-attacher of ${DRIVER} CSI driver to attach volume h-slow`,
  );
});
