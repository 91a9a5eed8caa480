// The seed's "Migration Shim Testing": the hostpath driver registered as the AWS EBS CSI driver
// (ebs.csi.aws.com) serves in-tree AWS EBS objects through their whole lifecycle with the real
// parts in one process — the API server, every controller loop (PV controller, scheduler,
// attach/detach), the real external-provisioner and external-attacher, the node agent with its
// plugin registration. An in-tree StorageClass (kubernetes.io/aws-ebs) is provisioned, the PV
// created and kept in its in-tree shape; a pod using it and an inline awsElasticBlockStore
// volume is scheduled, both volumes attached (the inline one through inlineVolumeSpec), staged
// and published at the kubelet's CSI paths, then torn down, detached, and the provisioned
// volume deleted through the driver. (The same on `csikit up`, each component its own process,
// with a raw block volume besides: test/e2e/up-migration.test.ts; this one keeps every part in
// one process, as volumes.test.ts does, so a failure points at a component's own log lines.) AWS EBS because its handle may be any string, as hostpath's UUIDs are;
// GCE PD handles need the projects/…/disks/… form (covered by src/node and src/controllers).
//
// As root this file re-executes itself under `unshare -m --propagation private`, so every mount
// vanishes with that namespace; unprivileged, the driver cannot mount: the stage/publish part is
// skipped saying why, the rest runs.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  ANNOTATIONS,
  GVR,
  type CSINode,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeAttachment,
} from "../../src/api/index.ts";
import { runLoops } from "../harness/controllers.ts";
import { CsiClient } from "../../src/csi/index.ts";
import { runNode, serveRegistration, getPod, podRunning } from "../harness/node.ts";
import { attachmentName, KubeletPaths } from "../../src/node/index.ts";
import { runAttacher } from "../harness/attacher.ts";
import { createClass, runProvisioner, startCluster, startHostpath } from "../harness/provisioner.ts";
import { until } from "../harness/until.ts";
import { defer } from "../harness/cleanup.ts";

const NAMESPACE_ENV = "CSIKIT_SHIM_IN_MOUNT_NS";
const isRoot = process.getuid?.() === 0;
const inNamespace = process.env[NAMESPACE_ENV] === "1";
const hasUnshare = spawnSync("unshare", ["--version"]).status === 0;
const MOUNTS = isRoot && inNamespace;
const EBS = "ebs.csi.aws.com";
const EBS_PLUGIN = "kubernetes.io/aws-ebs";
const NODE = "shim-node";
const NS = "default";
const LONG = 90_000;

async function mountPointsUnder(dir: string): Promise<string[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  return text
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(dir + "/"));
}

async function volumeIds(socket: string): Promise<string[]> {
  const client = CsiClient.connect(socket);
  try {
    return (await client.controller.listVolumes({})).entries.map((e) => e.volume?.volumeId ?? "");
  } finally {
    client.close();
  }
}

async function attached(va: () => Promise<VolumeAttachment | undefined>) {
  const current = await va();
  return current?.status?.attached ? current : undefined;
}

if (isRoot && hasUnshare && !inNamespace) {
  test("migration shim end to end (in a private mount namespace)", { timeout: 400_000 }, async () => {
    const env: Record<string, string | undefined> = { ...process.env, [NAMESPACE_ENV]: "1" };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(
      "unshare",
      [
        "-m",
        "--propagation",
        "private",
        process.execPath,
        "--test",
        "--test-reporter=spec",
        fileURLToPath(import.meta.url),
      ],
      { env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, output);
    assert.match(output, /pass 1/, output);
    assert.match(output, /skipped 0/, output);
  });
} else {
  test(
    "in-tree AWS EBS class, PV and inline volume served by the CSI driver through the whole lifecycle",
    { timeout: 300_000 },
    async (t) => {
      const cluster = await startCluster(t);
      const { client } = cluster;
      const root = join(cluster.dir, "node-root");
      const paths = new KubeletPaths(root);
      const driver = await startHostpath(t, cluster.dir, { driverName: EBS, node: true, nodeId: NODE });
      await client.create(GVR.csiDrivers, {
        apiVersion: "storage.k8s.io/v1",
        kind: "CSIDriver",
        metadata: { name: EBS },
        spec: { attachRequired: true },
      });
      const loops = runLoops(client);
      defer(t, () => loops.stop());
      const node = await runNode(t, client, { nodeName: NODE, rootDir: root });
      defer(t, () => node.stop());
      const registration = await serveRegistration(t, {
        rootDir: root,
        driverName: EBS,
        endpoint: driver.path,
      });
      defer(t, () => registration.server.close());
      await until(
        async () =>
          (await client.get<CSINode>(GVR.csiNodes, NODE)).spec.drivers.some((d) => d.name === EBS) ||
          undefined,
        "the node registered the driver",
        { timeoutMs: LONG },
      );
      const provisioner = runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
      runAttacher(t, cluster, driver.path);

      // Provisioned: the in-tree class is the driver's through migration; the PV stays in-tree.
      await createClass(cluster, "gp2", EBS_PLUGIN, {
        reclaimPolicy: "Delete",
        parameters: { fsType: "ext4" },
      });
      // A plain claim of the in-tree class: the PV controller hands it to the driver.
      await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "data", namespace: NS },
        spec: {
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "1Mi" } },
          storageClassName: "gp2",
        },
      });
      const claim = await until(
        async () => {
          const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", {
            namespace: NS,
          });
          return current.status?.phase === "Bound" ? current : undefined;
        },
        "claim bound",
        { timeoutMs: LONG },
      ).catch(async (error: unknown) => {
        const current = await client.get(GVR.persistentVolumeClaims, "data", { namespace: NS });
        t.diagnostic(`claim: ${JSON.stringify(current)}`);
        t.diagnostic(`pvs: ${JSON.stringify((await client.list(GVR.persistentVolumes)).items)}`);
        t.diagnostic(
          `provisioner: ${provisioner.logs
            .filter((l) => !l.includes("GRPC"))
            .slice(-8)
            .join("\n")}`,
        );
        throw error;
      });
      assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.storageProvisioner.key], EBS);
      assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.migratedTo.key], EBS);
      const pvName = claim.spec?.volumeName ?? "";
      const pv = await until(
        async () => {
          const current = await client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
          return current.metadata?.annotations?.[ANNOTATIONS.migratedTo.key] === EBS ? current : undefined;
        },
        "PV marked migrated-to",
        { timeoutMs: LONG },
      );
      assert.equal(pv.spec?.csi, undefined, "in-tree shape kept");
      assert.equal(pv.metadata?.annotations?.[ANNOTATIONS.provisionedBy.key], EBS_PLUGIN);
      const handle = (pv.spec?.awsElasticBlockStore as { volumeID?: string } | undefined)?.volumeID ?? "";
      assert.ok((await volumeIds(driver.path)).includes(handle), "the driver made the volume");

      // An inline in-tree volume of an existing disk.
      const csi = CsiClient.connect(driver.path);
      defer(t, () => csi.close());
      const inline = await csi.controller.createVolume({
        name: "inline-disk",
        capacityRange: { requiredBytes: "1048576" },
        volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
      });
      const inlineHandle = inline.volume?.volumeId ?? "";

      // Attached: the scheduler places the pod, the controller creates both attachments.
      const created = await client.create(GVR.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "app", namespace: NS },
        spec: {
          containers: [{ name: "app", image: "busybox" }],
          volumes: [
            { name: "data", persistentVolumeClaim: { claimName: "data" } },
            { name: "scratch", awsElasticBlockStore: { volumeID: inlineHandle, fsType: "ext4" } },
          ],
        },
      });
      const uid = (created as { metadata?: { uid?: string } }).metadata?.uid ?? "";
      const pvVA = attachmentName(handle, EBS, NODE);
      const inlineVA = attachmentName(inlineHandle, EBS, NODE);
      const get = (name: string) => () =>
        client.get<VolumeAttachment>(GVR.volumeAttachments, name).catch(() => undefined);
      const forPV = await until(() => attached(get(pvVA)), "PV attached", { timeoutMs: LONG });
      assert.deepEqual(forPV.spec.source, { persistentVolumeName: pvName });
      const forInline = await until(() => attached(get(inlineVA)), "inline volume attached", {
        timeoutMs: LONG,
      });
      assert.equal(forInline.spec.source.inlineVolumeSpec?.csi?.volumeHandle, inlineHandle);
      assert.equal(forInline.spec.source.inlineVolumeSpec?.csi?.driver, EBS);

      // Staged and published at the kubelet's CSI paths.
      if (MOUNTS) {
        await until(() => podRunning(client, NS, "app"), "pod Running", { timeoutMs: LONG });
        const mounts = await mountPointsUnder(root);
        for (const [h, dirName] of [
          [handle, pvName],
          [inlineHandle, `${EBS}-${inlineHandle}`],
        ] as const) {
          assert.ok(mounts.includes(paths.stagingTarget(EBS, h)), `staged ${h}: ${mounts.join(", ")}`);
          assert.ok(
            mounts.includes(paths.publishTarget(uid, dirName)),
            `published ${h}: ${mounts.join(", ")}`,
          );
        }
        await writeFile(join(paths.publishTarget(uid, pvName), "hello.txt"), "hi");
        assert.equal(await readFile(join(paths.stagingTarget(EBS, handle), "hello.txt"), "utf8"), "hi");
      } else {
        t.diagnostic("stage/publish/Running part skipped: needs root to mount (run the tests as root)");
      }

      // Torn down and detached; the in-tree PV still in-tree.
      await client.delete(GVR.pods, "app", { namespace: NS });
      await until(
        async () => ((await getPod(client, NS, "app")) === undefined ? true : undefined),
        "pod gone",
        { timeoutMs: LONG },
      );
      await until(
        async () =>
          (await get(pvVA)()) === undefined && (await get(inlineVA)()) === undefined ? true : undefined,
        "both detached",
        { timeoutMs: LONG },
      );
      if (MOUNTS) assert.deepEqual(await mountPointsUnder(root), [], "nothing left mounted");
      assert.equal((await client.get<PersistentVolume>(GVR.persistentVolumes, pvName)).spec?.csi, undefined);

      // Deleted: the claim goes, the PV is released and deleted through the driver.
      await client.delete(GVR.persistentVolumeClaims, "data", { namespace: NS });
      await until(
        async () =>
          (await client.get(GVR.persistentVolumes, pvName).catch(() => undefined)) === undefined
            ? true
            : undefined,
        "PV deleted",
        { timeoutMs: LONG },
      );
      assert.ok(!(await volumeIds(driver.path)).includes(handle), "the driver deleted the volume");
      await csi.controller.deleteVolume({ volumeId: inlineHandle });
    },
  );
}
