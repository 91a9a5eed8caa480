// The seed's "Upgrade/Downgrade/Skew Testing" table, row by row, with the real parts: the API
// server, the attach/detach controller with its own --feature-gates, the node agent with its
// own (or no node agent at all: a kubelet too old to write a CSINode), and a scripted CSI node
// plugin registered as pxd.portworx.com through the real registrar. Portworx, because at 1.32
// it is the one plugin whose migration can still be switched off (CSIMigrationPortworx).
//
// One pod uses an in-tree Portworx PV and, as a marker, a native CSI PV of the same driver: the
// controller decides all of a node's volumes in one pass, so once the marker's
// VolumeAttachment exists the Portworx volume was decided too; once the marker is staged, the
// node has considered the Portworx one. The test plays the attacher (marks attachments attached).
//
// Expected, per the seed: both migrated → the driver serves the in-tree volume (attached,
// staged, published, pod Running); controller migrated and kubelet not (or too old) → no call
// reaches the driver for it; controller not and kubelet migrated → unsupported: csikit refuses
// (FailedAttachVolume naming the skew) and the driver is not called; neither → no call.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { GVR, type Node, type PersistentVolumeClaim, type VolumeAttachment } from "../../src/api/index.ts";
import { startAttachDetachController } from "../../src/controllers/attachdetach/index.ts";
import { startTestServer } from "../harness/kube-server.ts";
import { InformerFactory, type CoreEvent, type KubeClient } from "../../src/kube/index.ts";
import { resolveFeatureGates } from "../../src/migration/index.ts";
import {
  pod,
  podRunning,
  runNode,
  runRealRegistrar,
  serveScriptedNode,
  type ScriptedNode,
} from "../harness/node.ts";
import { attachmentName } from "../../src/node/index.ts";
import { until } from "../harness/until.ts";
import { defer, tempDir } from "../harness/cleanup.ts";

const PX = "pxd.portworx.com";
const NODE = "skew-node";
const NS = "default";

type Kubelet = "migrated" | "not migrated" | "too old (no CSINode)";

interface Row {
  adc: "on" | "off";
  kubelet: Kubelet;
  expected: "fully migrated" | "no driver calls" | "refused: unsupported skew";
}

const TABLE: Row[] = [
  { adc: "on", kubelet: "migrated", expected: "fully migrated" },
  { adc: "on", kubelet: "not migrated", expected: "no driver calls" },
  { adc: "on", kubelet: "too old (no CSINode)", expected: "no driver calls" },
  { adc: "off", kubelet: "migrated", expected: "refused: unsupported skew" },
  { adc: "off", kubelet: "not migrated", expected: "no driver calls" },
];

function gates(on: boolean) {
  return resolveFeatureGates({ CSIMigrationPortworx: on });
}

async function boundPV(client: KubeClient, name: string, source: Record<string, unknown>): Promise<void> {
  const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    metadata: { name, namespace: NS },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      volumeName: `pv-${name}`,
      storageClassName: "",
    },
  });
  await client.updateStatus(GVR.persistentVolumeClaims, {
    ...claim,
    status: { phase: "Bound", accessModes: ["ReadWriteOnce"], capacity: { storage: "1Mi" } },
  });
  await client.create(GVR.persistentVolumes, {
    metadata: { name: `pv-${name}` },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      claimRef: { kind: "PersistentVolumeClaim", namespace: NS, name, uid: claim.metadata?.uid ?? "" },
      ...source,
    },
  });
}

async function attachment(client: KubeClient, name: string): Promise<VolumeAttachment | undefined> {
  return client.get<VolumeAttachment>(GVR.volumeAttachments, name).catch(() => undefined);
}

async function markAttached(client: KubeClient, name: string): Promise<void> {
  await client.patch(GVR.volumeAttachments, name, { status: { attached: true } }, { subresource: "status" });
}

async function eventWith(client: KubeClient, reason: string, text: string): Promise<CoreEvent> {
  return until(async () => {
    const events = (await client.list<CoreEvent>(GVR.events, { namespace: NS })).items;
    return events.find((e) => e.reason === reason && (e.message ?? "").includes(text));
  }, `${reason} event saying ${text}`);
}

function startController(t: TestContext, client: KubeClient, on: boolean): void {
  const informers = new InformerFactory({ client, freeze: true });
  const controller = new AbortController();
  const running = startAttachDetachController(
    { client, informers, featureGates: gates(on) },
    controller.signal,
  );
  const informersRunning = informers.start(controller.signal);
  defer(t, async () => {
    controller.abort();
    await Promise.all([running, informersRunning]);
  });
}

function stagedHandles(driver: ScriptedNode): string[] {
  return driver.callsOf("NodeStageVolume").map((c) => String(c.request.volumeId));
}

for (const row of TABLE) {
  test(`skew: ADC migration ${row.adc}, kubelet ${row.kubelet} → ${row.expected}`, async (t) => {
    const server = await startTestServer();
    defer(t, () => server.stop());
    const client = server.client();
    defer(t, () => client.close());
    let driver: ScriptedNode | undefined;
    if (row.kubelet === "too old (no CSINode)") {
      // A kubelet that predates migration: a managed, Ready node and no CSINode.
      const node = await client.create<Node>(GVR.nodes, {
        metadata: {
          name: NODE,
          annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
        },
      });
      await client.updateStatus(GVR.nodes, {
        ...node,
        status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }] },
      });
    } else {
      const root = await tempDir(t);
      const endpoint = join(await tempDir(t, "csikit-skew-driver-"), "csi.sock");
      driver = await serveScriptedNode(t, {
        endpoint,
        nodeId: "px-node",
        capabilities: ["STAGE_UNSTAGE_VOLUME"],
        name: PX,
      });
      await runNode(t, client, {
        nodeName: NODE,
        rootDir: root,
        featureGates: gates(row.kubelet === "migrated"),
      });
      await runRealRegistrar(t, client, { rootDir: root, nodeName: NODE, csiAddress: endpoint });
    }
    startController(t, client, row.adc === "on");
    await boundPV(client, "legacy", { portworxVolume: { volumeID: "px-legacy", fsType: "ext4" } });
    await boundPV(client, "marker", { csi: { driver: PX, volumeHandle: "px-marker" } });
    await client.create(
      GVR.pods,
      pod(NS, "app", {
        nodeName: NODE,
        volumes: [
          { name: "legacy", persistentVolumeClaim: { claimName: "legacy" } },
          { name: "marker", persistentVolumeClaim: { claimName: "marker" } },
        ],
      }),
    );

    // The controller's side: the marker's attachment means the in-tree volume was decided.
    const marker = attachmentName("px-marker", PX, NODE);
    const legacy = attachmentName("px-legacy", PX, NODE);
    await until(() => attachment(client, marker), "the marker's VolumeAttachment");
    const legacyVA = await attachment(client, legacy);
    assert.equal(
      legacyVA !== undefined,
      row.expected === "fully migrated",
      "in-tree volume attached via CSI",
    );
    if (row.expected === "refused: unsupported skew")
      await eventWith(
        client,
        "FailedAttachVolume",
        "CSI migration of that plugin is off in the attach/detach controller",
      );
    await markAttached(client, marker);
    if (legacyVA) {
      assert.deepEqual(legacyVA.spec.source, { persistentVolumeName: "pv-legacy" });
      await markAttached(client, legacy);
    }

    // The kubelet's side.
    if (!driver) return; // no kubelet to ask
    if (row.expected === "fully migrated") {
      await until(() => podRunning(client, NS, "app"), "pod Running");
      assert.deepEqual(stagedHandles(driver).sort(), ["px-legacy", "px-marker"]);
      const published = driver.callsOf("NodePublishVolume").map((c) => String(c.request.volumeId));
      assert.deepEqual(published.sort(), ["px-legacy", "px-marker"]);
      return;
    }
    await until(() => stagedHandles(driver).includes("px-marker"), "the marker staged");
    if (row.kubelet === "not migrated")
      await eventWith(client, "FailedMount", "CSI migration of that plugin is off on this node");
    const calls = driver.calls.filter((c) => JSON.stringify(c.request).includes("px-legacy"));
    assert.deepEqual(calls, [], "no call reached the driver for the in-tree volume");
    assert.equal(await podRunning(client, NS, "app"), undefined, "the pod does not run without its volume");
  });
}
