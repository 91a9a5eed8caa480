// `csikit doctor` on real parts: the embedded API server, the hostpath driver over a Unix
// socket, real bind mounts and loop devices under a fake node root (root only), and the CLI as
// a process under a read-only identity whose every request the server audits.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { GVR, type PersistentVolumeClaim, type Pod, type VolumeAttachment } from "../../src/api/index.ts";
import { silentLogger } from "../../src/base/index.ts";
import { CsiClient } from "../../src/csi/index.ts";
import {
  FixRefused,
  applyFix,
  runDoctor,
  type DoctorOptions,
  type DoctorReport,
} from "../../src/doctor/index.ts";
import { isNotFound, type KubeClient } from "../../src/kube/index.ts";
import { defer } from "../harness/cleanup.ts";
import { connect } from "../harness/csi.ts";
import { IS_ROOT, exitOf, startCsikit } from "../harness/csikit-process.ts";
import { persistentVolume } from "../harness/node.ts";
import { HOSTPATH, startCluster, startHostpath } from "../harness/provisioner.ts";
import { describeEvent, startRbacCluster } from "../harness/rbac.ts";
import { applyManifests, type Manifest } from "../../src/cluster/index.ts";
import { installSnapshotCrds, writeReadySnapshot } from "../harness/snapshots.ts";

const run = promisify(execFile);
const MOUNT_SKIP = IS_ROOT ? false : "needs root: bind mounts and loop devices under a fake node root";

/** "kind object fix|manual" per finding. */
function summary(report: DoctorReport): string[] {
  return report.findings.map((f) => `${f.kind} ${f.object} ${f.fix ? "fix" : "manual"}`);
}

function options(client: KubeClient, extra: Partial<DoctorOptions> = {}): DoctorOptions {
  return { kube: client, minAgeMs: 0, timeoutMs: 20_000, logger: silentLogger, ...extra };
}

async function createVolume(csi: CsiClient, name: string): Promise<string> {
  const answer = await csi.controller.createVolume({
    name,
    capacityRange: { requiredBytes: "1048576" },
    volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
  });
  return answer.volume!.volumeId;
}

async function listedVolumes(csi: CsiClient): Promise<string[]> {
  return (await csi.controller.listVolumes({})).entries.map((e) => e.volume!.volumeId);
}

async function exists(
  client: KubeClient,
  gvr: Parameters<KubeClient["get"]>[0],
  name: string,
  namespace?: string,
): Promise<boolean> {
  try {
    await client.get(gvr, name, namespace ? { namespace } : {});
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

function claim(name: string, finalizers: string[] = []): PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: "default", finalizers },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
  };
}

function podUsing(name: string, claimName: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      containers: [{ name: "c", image: "none" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
    },
  };
}

function attachment(name: string, nodeName: string, pvName: string): VolumeAttachment {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "VolumeAttachment",
    metadata: { name },
    spec: { attacher: HOSTPATH, nodeName, source: { persistentVolumeName: pvName } },
  };
}

test("backend: a leak is reported and deleted, a PV's volume never is, a PV whose volume is gone is reported only", async (t) => {
  const cluster = await startCluster(t);
  await installSnapshotCrds(cluster.client);
  const driver = await startHostpath(t, cluster.dir);
  const csi = connect(t, driver.path);
  const client = cluster.client;

  const kept = await createVolume(csi, "kept");
  await client.create(GVR.persistentVolumes, persistentVolume("pv-kept", { driver: HOSTPATH, handle: kept }));
  const leak = await createVolume(csi, "leak");
  const lost = await createVolume(csi, "lost");
  await client.create(GVR.persistentVolumes, persistentVolume("pv-lost", { driver: HOSTPATH, handle: lost }));
  await csi.controller.deleteVolume({ volumeId: lost });
  // A PV its provisioner never let go: deleted, volume already gone, finalizer still on.
  const released = await createVolume(csi, "released");
  const releasedPv = persistentVolume("pv-released", { driver: HOSTPATH, handle: released });
  releasedPv.metadata.finalizers = ["external-provisioner.volume.kubernetes.io/finalizer"];
  releasedPv.spec!.persistentVolumeReclaimPolicy = "Delete";
  await client.create(GVR.persistentVolumes, releasedPv);
  await csi.controller.deleteVolume({ volumeId: released });
  await client.delete(GVR.persistentVolumes, "pv-released");
  // A snapshot a content names, and one nothing names.
  const named = (await csi.controller.createSnapshot({ sourceVolumeId: kept, name: "named" })).snapshot!;
  await writeReadySnapshot(client, {
    name: "named",
    driver: HOSTPATH,
    handle: named.snapshotId,
    sizeBytes: 1048576,
  });
  const leakedSnapshot = (await csi.controller.createSnapshot({ sourceVolumeId: kept, name: "leaked" }))
    .snapshot!;

  const report = await runDoctor(options(client, { csiAddress: driver.path }));
  assert.equal(report.driverName, HOSTPATH);
  assert.deepEqual(summary(report).sort(), [
    `orphan-snapshot backend snapshot ${leakedSnapshot.snapshotId} fix`,
    `orphan-volume backend volume ${leak} fix`,
    "stuck-finalizer PersistentVolume pv-released fix",
    "volume-missing PersistentVolume pv-lost manual",
  ]);
  assert.equal(report.remaining, 4);
  assert.deepEqual((await listedVolumes(csi)).sort(), [kept, leak].sort(), "a report writes nothing");

  const fixed = await runDoctor(options(client, { csiAddress: driver.path, fix: true }));
  assert.deepEqual(fixed.fixes?.map((f) => `${f.status} ${f.description}`).sort(), [
    `fixed DeleteSnapshot ${leakedSnapshot.snapshotId}`,
    `fixed DeleteVolume ${leak}`,
    "fixed remove finalizer external-provisioner.volume.kubernetes.io/finalizer from PersistentVolume pv-released",
  ]);
  assert.equal(fixed.remaining, 1, "the PV whose volume is gone stays for a person to decide");
  assert.deepEqual(await listedVolumes(csi), [kept]);
  const snapshots = (await csi.controller.listSnapshots({})).entries.map((e) => e.snapshot!.snapshotId);
  assert.deepEqual(snapshots, [named.snapshotId]);
  assert.equal(await exists(client, GVR.persistentVolumes, "pv-released"), false);
  assert.equal(await exists(client, GVR.persistentVolumes, "pv-lost"), true);

  // The hard rule holds in the fixer itself, whatever a finding says.
  await assert.rejects(
    applyFix(
      { kube: client, csi: { client: csi, backend: { driverName: HOSTPATH, publishedNodes: false } } },
      {
        type: "delete-volume",
        volumeId: kept,
      },
    ),
    (error: unknown) => error instanceof FixRefused && /names volume/.test(error.message),
  );
  assert.deepEqual(await listedVolumes(csi), [kept]);

  // A PV made for a leak while the fix waits for its confirmation: the fresh look keeps the volume.
  const late = await createVolume(csi, "late");
  const raced = await runDoctor(
    options(client, {
      csiAddress: driver.path,
      fix: true,
      confirm: async () => {
        await client.create(
          GVR.persistentVolumes,
          persistentVolume("pv-late", { driver: HOSTPATH, handle: late }),
        );
        return true;
      },
    }),
  );
  assert.deepEqual(
    raced.fixes?.map((f) => `${f.status} ${f.description}`),
    [`no-longer-found DeleteVolume ${late}`],
  );
  assert.deepEqual((await listedVolumes(csi)).sort(), [kept, late].sort());
});

test("API: an attachment to a deleted node and a claim's protection past its pods are reported and fixed; a claim in use is not", async (t) => {
  const cluster = await startCluster(t);
  const client = cluster.client;
  await client.create(GVR.nodes, { apiVersion: "v1", kind: "Node", metadata: { name: "node-1" } });
  await client.create(GVR.volumeAttachments, attachment("va-live", "node-1", "pv-a"));
  await client.create(GVR.volumeAttachments, attachment("va-stale", "node-gone", "pv-a"));
  await client.create(GVR.persistentVolumeClaims, claim("orphaned", ["kubernetes.io/pvc-protection"]));
  await client.create(GVR.persistentVolumeClaims, claim("in-use", ["kubernetes.io/pvc-protection"]));
  await client.create(GVR.pods, podUsing("user", "in-use"));
  await client.delete(GVR.persistentVolumeClaims, "orphaned", { namespace: "default" });
  await client.delete(GVR.persistentVolumeClaims, "in-use", { namespace: "default" });

  const report = await runDoctor(options(client));
  assert.match(report.notes.join("\n"), /skipped backend checks .*no --csi-address/);
  assert.deepEqual(summary(report), [
    "attachment-to-deleted-node VolumeAttachment va-stale fix",
    "stuck-finalizer PersistentVolumeClaim default/in-use manual",
    "stuck-finalizer PersistentVolumeClaim default/orphaned fix",
  ]);
  const young = await runDoctor(options(client, { minAgeMs: 3_600_000 }));
  assert.deepEqual(
    summary(young),
    ["attachment-to-deleted-node VolumeAttachment va-stale fix"],
    "a fresh deletion is not stuck",
  );

  const declined = await runDoctor(options(client, { fix: true, confirm: async () => false }));
  assert.deepEqual(
    declined.fixes?.map((f) => f.status),
    ["declined", "declined"],
  );
  assert.equal(await exists(client, GVR.volumeAttachments, "va-stale"), true);

  const fixed = await runDoctor(options(client, { fix: true }));
  assert.deepEqual(
    fixed.fixes?.map((f) => f.status),
    ["fixed", "fixed"],
  );
  assert.equal(fixed.remaining, 1);
  assert.equal(await exists(client, GVR.volumeAttachments, "va-stale"), false);
  assert.equal(await exists(client, GVR.volumeAttachments, "va-live"), true);
  assert.equal(await exists(client, GVR.persistentVolumeClaims, "orphaned", "default"), false);
  assert.equal(await exists(client, GVR.persistentVolumeClaims, "in-use", "default"), true);
  const again = await runDoctor(options(client, { fix: true }));
  assert.deepEqual(again.fixes, [], "nothing left to fix: a second run changes nothing");
});

/** A bind mount at `target` (created), undone at cleanup if doctor left it. */
async function bindMount(t: TestContext, source: string, target: string): Promise<void> {
  await mkdir(target, { recursive: true });
  await run("mount", ["--bind", source, target]);
  defer(t, () => run("umount", [target]).catch(() => undefined));
}

test(
  "node root: mounts and loop devices no pod owns are reported and removed; a live pod's stay",
  { skip: MOUNT_SKIP },
  async (t) => {
    const cluster = await startCluster(t);
    const client = cluster.client;
    const root = join(cluster.dir, "nodes", "node-1");
    const source = join(cluster.dir, "source");
    await mkdir(source, { recursive: true });
    const live = await client.create<Pod>(GVR.pods, podUsing("live", "data"));
    const liveMount = join(root, "pods", live.metadata.uid!, "volumes", "kubernetes.io~csi", "data", "mount");
    const deadMount = join(root, "pods", "0000-dead", "volumes", "kubernetes.io~csi", "data", "mount");
    await bindMount(t, source, liveMount);
    await bindMount(t, source, deadMount);
    const deviceFile = join(
      root,
      "plugins",
      "kubernetes.io",
      "csi",
      "volumeDevices",
      "publish",
      "pv-a",
      "0000-dead",
    );
    await mkdir(join(deviceFile, ".."), { recursive: true });
    await writeFile(deviceFile, Buffer.alloc(1024 * 1024));
    const loop = (await run("losetup", ["--find", "--show", deviceFile])).stdout.trim();
    defer(t, () => run("losetup", ["-d", loop]).catch(() => undefined));

    const report = await runDoctor(options(client, { nodeRoots: [root] }));
    assert.deepEqual(summary(report), [
      `orphan-mount mount ${deadMount} fix`,
      `orphan-loop-device loop device ${loop} fix`,
    ]);

    const fixed = await runDoctor(options(client, { nodeRoots: [root], fix: true }));
    assert.deepEqual(
      fixed.fixes?.map((f) => f.status),
      ["fixed", "fixed"],
    );
    const mountinfo = await readFile("/proc/self/mountinfo", "utf8");
    assert.equal(mountinfo.includes(deadMount), false, "the orphan mount is gone");
    assert.equal(mountinfo.includes(liveMount), true, "the live pod's mount stays");
    const backing = await readFile(`/sys/block/${loop.replace("/dev/", "")}/loop/backing_file`, "utf8").catch(
      () => "",
    );
    assert.equal(backing, "", "the loop device is detached");
  },
);

/** The ClusterRoles docs/doctor.md gives (the block after `<!-- doctor-rbac -->`): the test holds the doc to its word. */
async function documentedRoles(): Promise<Manifest[]> {
  const doc = await readFile(new URL("../../docs/doctor.md", import.meta.url), "utf8");
  const block = /<!-- doctor-rbac -->\n```yaml\n([\s\S]*?)```/.exec(doc);
  assert.ok(block, "docs/doctor.md has its RBAC block");
  return parseAllDocuments(block[1]!).map((d) => d.toJS() as Manifest);
}

function binding(role: string, user: string): Manifest {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: role },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
  };
}

test("CLI under the documented read-only role: text and JSON reports, exit codes, no write; --fix --yes with the fix role", async (t) => {
  const user = "csikit-doctor";
  const cluster = await startRbacCluster(t, {
    staticIdentities: [{ component: "doctor", user, groups: [] }],
  });
  await applyManifests(cluster.admin, [...(await documentedRoles()), binding("csikit-doctor", user)]);
  const kubeconfig = await cluster.staticKubeconfig("doctor");
  await cluster.admin.create(GVR.volumeAttachments, attachment("va-stale", "node-gone", "pv-a"));
  const doctor = async (...args: string[]): Promise<{ code: unknown; output: string }> => {
    const child = startCsikit(t, ["doctor", `--kubeconfig=${kubeconfig}`, ...args]);
    const code = await exitOf(child);
    return { code, output: child.output() };
  };
  const auditFrom = cluster.audit.length;

  const text = await doctor();
  assert.equal(text.code, 1, text.output);
  assert.match(
    text.output,
    /attachment-to-deleted-node: VolumeAttachment va-stale\n {2}why: .*node node-gone, which no longer exists/,
  );
  assert.match(text.output, /1 finding: 1 fixable with --fix, 0 to handle by hand/);
  const json = await doctor("-o", "json");
  assert.equal(json.code, 1, json.output);
  const report = JSON.parse(json.output) as DoctorReport;
  assert.deepEqual(
    report.findings.map((f) => [f.kind, f.object, f.fix?.action.type]),
    [["attachment-to-deleted-node", "VolumeAttachment va-stale", "delete-object"]],
  );
  const asked = await doctor("--fix");
  assert.equal(asked.code, 2, asked.output);
  assert.match(asked.output, /needs a terminal .* give --yes/);

  const requests = cluster.audit.slice(auditFrom).filter((e) => e.user.username === user);
  assert.ok(requests.length > 0, "the doctor's requests are audited");
  const writes = requests.filter((e) => !["get", "list"].includes(e.verb) || e.responseStatus.code === 403);
  assert.deepEqual(
    writes.map(describeEvent),
    [],
    "a report only reads, and the read-only role is enough (the snapshot kinds answer 404: no CRDs here)",
  );
  assert.equal(await exists(cluster.admin, GVR.volumeAttachments, "va-stale"), true);

  await applyManifests(cluster.admin, [binding("csikit-doctor-fix", user)]);
  const fixed = await doctor("--fix", "--yes");
  assert.equal(fixed.code, 0, fixed.output);
  assert.match(fixed.output, /fixed: delete VolumeAttachment va-stale/);
  assert.equal(await exists(cluster.admin, GVR.volumeAttachments, "va-stale"), false);
  const clean = await doctor();
  assert.equal(clean.code, 0, clean.output);
  assert.match(clean.output, /no findings/);
});
