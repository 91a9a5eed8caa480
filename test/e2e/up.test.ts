// End to end on `csikit up` run as a user runs it: a child process (in a private mount
// namespace as root; in its own user + mount namespace otherwise) with 18 processes, real
// sockets, real mounts, the real API server enforcing RBAC. One cluster is shared by the cases
// (start-up dominates the time); the last case stops it with SIGINT and resumes it. Every wait
// is bounded; the cluster, its processes and the temp dir go away even when a case fails.

import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat, statfs, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type CSIDriver,
  type CSIStorageCapacity,
  type StorageClass,
  type VolumeAttachment,
} from "../../src/api/index.ts";
import { KubeClient, loadKubeConfig, type CoreEvent } from "../../src/kube/index.ts";
import { sandboxUnavailable } from "../../src/node/index.ts";
import {
  alive,
  clusterMounts,
  exitWithin,
  gone,
  hasKubectl,
  isRoot,
  MAIN,
  pids,
  SKIP,
  START_MS,
  startUp,
  STEP_MS,
  stopUp,
  type UpProcess,
} from "../harness/up.ts";
import { until } from "../harness/until.ts";
import { kubectl } from "../harness/kubectl.ts";
import { scrape } from "../harness/https-get.ts";

const EXAMPLES = fileURLToPath(new URL("../../examples/", import.meta.url));
/** Whether up's pods run their commands (and take exec): the walkthrough writes and reads through them then. */
const sandboxed = (await sandboxUnavailable()) === undefined;

describe("csikit up", { skip: SKIP }, () => {
  let base = "";
  let stateDir = "";
  let up: UpProcess | undefined;
  let client: KubeClient;
  const podRunning = (name: string) => async (): Promise<Pod | undefined> => {
    const pod = await client.get<Pod>(GVR.pods, name, { namespace: "default" });
    return pod.status?.phase === "Running" ? pod : undefined;
  };

  before(async () => {
    base = await mkdtemp(join(tmpdir(), "csikit-up-"));
    stateDir = join(base, "state");
    up = startUp(stateDir, ["--walkthrough"]);
    await until(
      () => {
        const text = up!.output();
        if (/✗/.test(text) || up!.child.exitCode !== null) throw new Error(`up failed:\n${text}`);
        return /walkthrough done/.test(text) ? true : undefined;
      },
      "the walkthrough to finish",
      { timeoutMs: START_MS },
    );
    client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "kubeconfig") }) });
  });

  after(async () => {
    client?.close();
    await stopUp(up, stateDir);
    await rm(base, { recursive: true, force: true });
  });

  test("the walkthrough runs the whole lifecycle: provision, attach, stage, publish, write/read, unpublish, unstage, detach, delete", () => {
    const text = up!.output();
    assert.match(text, /cluster ready in [\d.]+s/);
    for (const step of [
      /claim walkthrough-claim created and bound: CreateVolume/,
      /volume attached: ControllerPublishVolume by the attacher/,
      /volume staged: NodeStageVolume/,
      /volume published: NodePublishVolume/,
      ...(sandboxed
        ? [
            /file written through the pod \(pods\/exec, as kubectl exec\): .* found in the driver's storage/,
            /second pod walkthrough-reader on node /,
            /file read back through the second pod \(pods\/exec\): cat \/data\/hello.txt — "hello from csikit/,
          ]
        : [/file written through the pod's mount, read back from the driver's storage/]),
      /claim grown 1Mi → 2Mi: ControllerExpandVolume by the resizer — PV capacity 2Mi/,
      /filesystem grown: NodeExpandVolume by the node agent — claim status.capacity 2Mi, no resize condition left/,
      /claim events: Resizing, FileSystemResizeRequired, FileSystemResizeSuccessful/,
      // Issue 25 §6: snapshot → ready → restore → read back → group snapshot → nothing left.
      /VolumeSnapshot walkthrough-snapshot of walkthrough-claim readyToUse: CreateSnapshot by the snapshotter/,
      /claim walkthrough-restored restored from walkthrough-snapshot: CreateVolume from the snapshot/,
      /pod walkthrough-restore-pod reads hello\.txt through the restored claim's mount — .*: the content written before the snapshot/,
      /VolumeGroupSnapshot walkthrough-group of walkthrough-claim and walkthrough-claim-2 readyToUse/,
      /no content or backend snapshot left/,
      /ListSnapshots finds nothing of 3 volumes/,
      /pod deleted: NodeUnpublishVolume/,
      /volume unstaged: NodeUnstageVolume/,
      /volume detached: ControllerUnpublishVolume/,
      /claim deleted: DeleteVolume by the provisioner, PV gone/,
    ])
      assert.match(text, step);
    assert.match(text, /export KUBECONFIG=.*\/kubeconfig/);
  });

  test("each component has its own 0600 kubeconfig and RBAC refuses what deploy/rbac does not grant", async () => {
    for (const component of ["provisioner", "attacher", "resizer", "controllers", "node-1"]) {
      const mode = (await stat(join(stateDir, "identities", `${component}.kubeconfig`))).mode & 0o777;
      assert.equal(mode, 0o600, component);
    }
    assert.equal((await stat(stateDir)).mode & 0o777, 0o700);
    const provisioner = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "identities", "provisioner.kubeconfig") }),
    });
    try {
      // Allowed by external-provisioner-runner …
      await provisioner.list(GVR.persistentVolumes);
      // … and pods may not be listed cluster-wide (only get in its namespace, for capacity owners).
      await assert.rejects(provisioner.list(GVR.pods), /403|forbidden/i);
    } finally {
      provisioner.close();
    }
    const attacher = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "identities", "attacher.kubeconfig") }),
    });
    try {
      await assert.rejects(attacher.list(GVR.persistentVolumeClaims), /403|forbidden/i);
    } finally {
      attacher.close();
    }
    const resizer = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "identities", "resizer.kubeconfig") }),
    });
    try {
      // external-resizer-runner: claims and volumes, never VolumeAttachments.
      await resizer.list(GVR.persistentVolumeClaims);
      await assert.rejects(resizer.list(GVR.volumeAttachments), /403|forbidden/i);
    } finally {
      resizer.close();
    }
  });

  test("node agents are confined as kube-apiserver confines kubelets: Node authorizer and NodeRestriction", async () => {
    const nodeAs = (name: string) =>
      new KubeClient({
        kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "identities", `${name}.kubeconfig`) }),
      });
    const node1 = nodeAs("node-1");
    const node2 = nodeAs("node-2");
    try {
      await client.create(GVR.secrets, {
        metadata: { name: "node-1-only", namespace: "default" },
        stringData: { key: "value" },
      });
      await client.create<Pod>(GVR.pods, {
        metadata: { name: "secret-user", namespace: "default" },
        spec: {
          nodeName: "node-1",
          containers: [{ name: "app", image: "busybox" }],
          volumes: [{ name: "s", secret: { secretName: "node-1-only" } }],
        },
      });
      await node1.get(GVR.secrets, "node-1-only", { namespace: "default" });
      await assert.rejects(
        node2.get(GVR.secrets, "node-1-only", { namespace: "default" }),
        /no relationship found between node 'node-2' and this object/,
      );
      await assert.rejects(
        node2.patch(GVR.nodes, "node-1", { metadata: { labels: { stolen: "yes" } } }),
        /node "node-2" is not allowed to modify node "node-1"/,
      );
      await assert.rejects(
        node1.patch(GVR.nodes, "node-1", {
          metadata: { labels: { "node-restriction.kubernetes.io/trusted": "yes" } },
        }),
        /is not allowed to modify labels: node-restriction\.kubernetes\.io\/trusted/,
      );
      await assert.rejects(
        node1.list(GVR.persistentVolumes),
        /can only get individual resources of this type/,
      );
    } finally {
      await client.delete(GVR.pods, "secret-user", { namespace: "default" }).catch(() => undefined);
      await client.delete(GVR.secrets, "node-1-only", { namespace: "default" }).catch(() => undefined);
      node1.close();
      node2.close();
    }
  });

  test(
    "a bound, published claim grown with kubectl patch: PV capacity, claim status.capacity, conditions cleared, size through the mount",
    { skip: hasKubectl ? false : "kubectl is not installed" },
    async () => {
      const kubeconfig = join(stateDir, "kubeconfig");
      await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
        metadata: { name: "grow-claim", namespace: "default" },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
      });
      await client.create<Pod>(GVR.pods, {
        metadata: { name: "grow-app", namespace: "default" },
        spec: {
          containers: [{ name: "app", image: "busybox" }],
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: "grow-claim" } }],
        },
      });
      const pod = await until(podRunning("grow-app"), "grow-app to run", { timeoutMs: STEP_MS });
      const bound = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "grow-claim", {
        namespace: "default",
      });
      const pvName = bound.spec?.volumeName ?? "";
      assert.equal(bound.status?.capacity?.storage, "1Mi");
      const target = join(
        stateDir,
        "nodes",
        pod.spec?.nodeName ?? "",
        "pods",
        pod.metadata?.uid ?? "",
        "volumes",
        "kubernetes.io~csi",
        pvName,
        "mount",
      );
      assert.ok((await clusterMounts(stateDir, join(stateDir, "nodes"))).includes(target), "published");

      const patched = await kubectl(
        [
          "patch",
          "pvc",
          "grow-claim",
          "--type=merge",
          "-p",
          JSON.stringify({ spec: { resources: { requests: { storage: "3Mi" } } } }),
        ],
        { kubeconfig },
      );
      assert.equal(patched.code, 0, patched.stderr);
      const volume = await until(
        async () => {
          const pv = await client.get<PersistentVolume>(GVR.persistentVolumes, pvName);
          return pv.spec?.capacity?.storage === "3Mi" ? pv : undefined;
        },
        "the PV's capacity to be 3Mi",
        { timeoutMs: STEP_MS },
      );
      const claim = await until(
        async () => {
          const c = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "grow-claim", {
            namespace: "default",
          });
          return c.status?.capacity?.storage === "3Mi" ? c : undefined;
        },
        "the claim's status.capacity to be 3Mi",
        { timeoutMs: STEP_MS },
      );
      // Only the pvc-protection controller's Unused condition (1.37) may stay: no resize condition does.
      assert.deepEqual(
        (claim.status?.conditions ?? []).filter((c) => c.type !== "Unused"),
        [],
        "resize conditions cleared",
      );
      assert.equal(claim.status?.allocatedResourceStatuses?.storage, undefined, "no resize status left");
      assert.equal(claim.status?.allocatedResources?.storage, "3Mi");
      const handle = volume.spec?.csi?.volumeHandle ?? "";
      const events = await kubectl(
        [
          "get",
          "events",
          "--field-selector=involvedObject.name=grow-claim",
          "-o",
          "jsonpath={.items[*].reason}",
        ],
        { kubeconfig },
      );
      assert.equal(events.code, 0, events.stderr);
      for (const reason of ["Resizing", "FileSystemResizeRequired", "FileSystemResizeSuccessful"])
        assert.ok(events.stdout.split(" ").includes(reason), `Event ${reason} in ${events.stdout}`);
      if (isRoot) {
        // statfs through the published path, in the cluster's mount namespace: the bind mount
        // reaches the volume's directory, so it sees the filesystem holding the driver's volumes.
        const { apiserver } = await pids(stateDir);
        const root = `/proc/${apiserver}/root`;
        const through = await statfs(root + target);
        const backing = await statfs(join(root + stateDir, "hostpath", "volumes", handle));
        assert.ok(through.blocks * through.bsize >= 3 * 1024 * 1024, "the filesystem holds 3Mi");
        assert.equal(through.blocks * through.bsize, backing.blocks * backing.bsize);
        assert.equal(through.type, backing.type);
      } else
        console.log(
          "# statfs through the mount skipped: not root (the cluster's mounts are in its own user namespace)",
        );

      await client.delete(GVR.pods, "grow-app", { namespace: "default" });
      await until(
        () => gone(() => client.get(GVR.pods, "grow-app", { namespace: "default" })),
        "grow-app to go",
        { timeoutMs: STEP_MS },
      );
      await client.delete(GVR.persistentVolumeClaims, "grow-claim", { namespace: "default" });
      await until(
        () => gone(() => client.get(GVR.persistentVolumes, pvName)),
        "the grown volume to be deleted",
        { timeoutMs: STEP_MS },
      );
    },
  );

  test(
    "WaitForFirstConsumer with topology: the volume lands in the pod's zone",
    { skip: hasKubectl ? false : "kubectl is not installed" },
    async () => {
      const kubeconfig = join(stateDir, "kubeconfig");
      const applied = await kubectl(["apply", "-f", join(EXAMPLES, "topology.yaml")], { kubeconfig });
      assert.equal(applied.code, 0, applied.stderr);
      const pod = await until(podRunning("zonal-app"), "zonal-app to run", { timeoutMs: STEP_MS });
      assert.equal(pod.spec?.nodeName, "node-2", "node-2 is the only zone-b node of 3");
      const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "zonal-claim", {
        namespace: "default",
      });
      const volume = await client.get<PersistentVolume>(GVR.persistentVolumes, claim.spec?.volumeName ?? "");
      const values = volume.spec?.nodeAffinity?.required?.nodeSelectorTerms?.flatMap((term) =>
        (term.matchExpressions ?? []).flatMap((e) => e.values ?? []),
      );
      assert.deepEqual(values, ["node-2"]);
      const deleted = await kubectl(["delete", "-f", join(EXAMPLES, "topology.yaml"), "--wait=false"], {
        kubeconfig,
      });
      assert.equal(deleted.code, 0, deleted.stderr);
      await until(
        () => gone(() => client.get(GVR.persistentVolumes, volume.metadata?.name ?? "")),
        "the zonal volume to be deleted",
        { timeoutMs: STEP_MS },
      );
    },
  );

  test(
    "the examples apply and their pods run (raw block only as real root); their data is where it should be, seen through kubectl exec",
    { skip: hasKubectl ? false : "kubectl is not installed" },
    async () => {
      const kubeconfig = join(stateDir, "kubeconfig");
      // Examples whose pods run commands need the sandbox (without one such a pod fails, saying why).
      const running: [string, string[]][] = sandboxed
        ? [
            ["per-replica-claims.yaml", ["web-0", "web-1", "web-2"]],
            ["shared-claim.yaml", []],
            ["job-then-verify.yaml", ["result-verifier"]],
            ["generic-ephemeral.yaml", ["scratch-app"]],
          ]
        : [];
      const files: [string, string[]][] = [
        ["dynamic-provisioning.yaml", ["dynamic-app"]],
        ...running,
        ["storage.yaml", ["my-csi-app"]],
        ["inline-ephemeral.yaml", ["inline-app"]],
        ["secrets.yaml", ["secret-app"]],
        ...(isRoot ? ([["raw-block.yaml", ["block-app"]]] as [string, string[]][]) : []),
      ];
      for (const [file] of files) {
        const applied = await kubectl(["apply", "-f", join(EXAMPLES, file)], { kubeconfig });
        assert.equal(applied.code, 0, applied.stderr);
      }
      for (const [, pods] of files)
        for (const pod of pods) await until(podRunning(pod), `${pod} to run`, { timeoutMs: STEP_MS });
      if (sandboxed) await examplesHoldTheirData(kubeconfig);
      // Every example applied, still one default class: claims without a class keep going to up's.
      const classes = await client.list<StorageClass>(GVR.storageClasses);
      const defaults = classes.items.filter(
        (c) => c.metadata?.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true",
      );
      assert.deepEqual(
        defaults.map((c) => c.metadata?.name),
        ["csi-hostpath"],
      );
      // The Secret must outlive the volume (ControllerUnpublish and DeleteVolume read it), so the
      // secrets example's pod and claim go first and its Secret once the volume is gone.
      const secretsFirst = await kubectl(["delete", "pod/secret-app", "pvc/secret-claim", "--wait=false"], {
        kubeconfig,
      });
      assert.equal(secretsFirst.code, 0, secretsFirst.stderr);
      for (const [file] of files.filter(([name]) => name !== "secrets.yaml")) {
        const deleted = await kubectl(["delete", "-f", join(EXAMPLES, file), "--wait=false"], { kubeconfig });
        assert.equal(deleted.code, 0, deleted.stderr);
      }
      try {
        await until(
          async () => {
            const volumes = await client.list<PersistentVolume>(GVR.persistentVolumes);
            return volumes.items.length === 0 ? true : undefined;
          },
          "every example volume to be gone",
          { timeoutMs: STEP_MS },
        );
      } catch (error) {
        const left = await kubectl(["get", "pv,pvc,volumeattachments,pods", "-o", "wide"], { kubeconfig });
        throw new Error(
          `${error instanceof Error ? error.message : String(error)}\n${left.stdout}${left.stderr}`,
        );
      }
      const rest = await kubectl(["delete", "-f", join(EXAMPLES, "secrets.yaml"), "--ignore-not-found"], {
        kubeconfig,
      });
      assert.equal(rest.code, 0, rest.stderr);
    },
  );

  test("kill -9 of the attacher and of a node agent mid-lifecycle leaks no attachment, mount or volume", async () => {
    await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      metadata: { name: "crash-claim", namespace: "default" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
    });
    await client.create<Pod>(GVR.pods, {
      metadata: { name: "crash-app", namespace: "default" },
      spec: {
        nodeSelector: { "kubernetes.io/hostname": "node-1" },
        containers: [{ name: "app", image: "busybox" }],
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: "crash-claim" } }],
      },
    });
    const before = await pids(stateDir);
    process.kill(before.attacher!, "SIGKILL");
    process.kill(before["node-1"]!, "SIGKILL");
    const running = await until(podRunning("crash-app"), "crash-app to run after the restarts", {
      timeoutMs: STEP_MS,
    });
    const crashClaim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "crash-claim", {
      namespace: "default",
    });
    const crashVolume = crashClaim.spec?.volumeName ?? "";
    const podDir = join(stateDir, "nodes", "node-1", "pods", running.metadata?.uid ?? "");
    const after = await pids(stateDir);
    assert.notEqual(after.attacher, before.attacher, "the attacher was restarted");
    assert.notEqual(after["node-1"], before["node-1"], "the node agent was restarted");
    await client.delete(GVR.pods, "crash-app", { namespace: "default" });
    // Kill the attacher again while the pod's volume is being torn down and detached.
    process.kill(after.attacher!, "SIGKILL");
    await until(
      () => gone(() => client.get(GVR.pods, "crash-app", { namespace: "default" })),
      "crash-app to go",
      { timeoutMs: STEP_MS },
    );
    await client.delete(GVR.persistentVolumeClaims, "crash-claim", { namespace: "default" });
    await until(
      async () => {
        const attachments = (await client.list<VolumeAttachment>(GVR.volumeAttachments)).items.filter(
          (a) => a.spec?.source?.persistentVolumeName === crashVolume,
        );
        const volume = await gone(() => client.get(GVR.persistentVolumes, crashVolume));
        const mounts = await clusterMounts(stateDir, podDir);
        return attachments.length === 0 && volume && mounts.length === 0 ? true : undefined;
      },
      "no attachment, mount or volume of crash-claim left",
      { timeoutMs: STEP_MS },
    );
  });

  test("attach errors surface on the VolumeAttachment (attachError) and the pod (FailedAttachVolume Event)", async () => {
    // A static PV whose volume the driver does not have: ControllerPublishVolume fails NotFound.
    const volumeName = "missing-pv";
    const cleanup = async (): Promise<void> => {
      await client.delete(GVR.pods, "missing-app", { namespace: "default" }).catch(() => undefined);
      await client
        .delete(GVR.persistentVolumeClaims, "missing-claim", { namespace: "default" })
        .catch(() => undefined);
      await client.delete(GVR.persistentVolumes, volumeName).catch(() => undefined);
    };
    try {
      await client.create<PersistentVolume>(GVR.persistentVolumes, {
        metadata: { name: volumeName },
        spec: {
          capacity: { storage: "1Mi" },
          accessModes: ["ReadWriteOnce"],
          persistentVolumeReclaimPolicy: "Retain",
          storageClassName: "",
          csi: { driver: "hostpath.csi.k8s.io", volumeHandle: "no-such-volume" },
        },
      });
      await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
        metadata: { name: "missing-claim", namespace: "default" },
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: "",
          volumeName,
          resources: { requests: { storage: "1Mi" } },
        },
      });
      const pod = await client.create<Pod>(GVR.pods, {
        metadata: { name: "missing-app", namespace: "default" },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": "node-3" },
          containers: [{ name: "app", image: "busybox" }],
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: "missing-claim" } }],
        },
      });
      const attachment = await until(
        async () => {
          const items = (await client.list<VolumeAttachment>(GVR.volumeAttachments)).items;
          return items.find(
            (a) => a.spec?.source?.persistentVolumeName === volumeName && a.status?.attachError?.message,
          );
        },
        "the attach error on the VolumeAttachment",
        { timeoutMs: STEP_MS },
      );
      assert.equal(attachment.spec?.nodeName, "node-3");
      assert.equal(attachment.status?.attached ?? false, false);
      assert.match(attachment.status?.attachError?.message ?? "", /no-such-volume/);
      const event = await until(
        async () => {
          const events = await client.list<CoreEvent>(GVR.events, { namespace: "default" });
          return events.items.find(
            (e) =>
              e.reason === "FailedAttachVolume" &&
              e.involvedObject.kind === "Pod" &&
              e.involvedObject.uid === pod.metadata?.uid,
          );
        },
        "FailedAttachVolume on the pod",
        { timeoutMs: STEP_MS },
      );
      assert.equal(event.type, "Warning");
      assert.match(event.message, /AttachVolume\.Attach failed for volume "missing-pv"/);
      assert.match(event.message, /no-such-volume/);
      const current = await client.get<Pod>(GVR.pods, "missing-app", { namespace: "default" });
      assert.equal(current.status?.phase, "Pending", "the pod cannot start without its volume");
      // Tear-down of a never-attached volume: the attachment and the PV go without leftovers.
      await cleanup();
      await until(
        async () => {
          const items = (await client.list<VolumeAttachment>(GVR.volumeAttachments)).items;
          const left = items.some((a) => a.spec?.source?.persistentVolumeName === volumeName);
          return !left && (await gone(() => client.get(GVR.persistentVolumes, volumeName)))
            ? true
            : undefined;
        },
        "the failed attachment and the PV to be gone",
        { timeoutMs: STEP_MS },
      );
    } finally {
      await cleanup();
    }
  });

  test("today's defaults: a VolumeAttributesClass change, CSIStorageCapacity per node, every metrics endpoint on loopback", async () => {
    const text = up!.output();
    assert.match(
      text,
      /claim moved to VolumeAttributesClass walkthrough-gold: ControllerModifyVolume by the resizer — status\.currentVolumeAttributesClassName walkthrough-gold, event VolumeModifySuccessful/,
    );
    const driver = await client.get<CSIDriver>(GVR.csiDrivers, "hostpath.csi.k8s.io");
    assert.equal(driver.spec?.storageCapacity, true);
    // One CSIStorageCapacity per node segment of the default (WaitForFirstConsumer) class.
    const capacities = await until(
      async () => {
        const list = await client.list<CSIStorageCapacity>(GVR.csiStorageCapacities, {
          namespace: "default",
        });
        const ours = list.items.filter((c) => c.storageClassName === "csi-hostpath");
        return ours.length >= 3 ? ours : undefined;
      },
      "a CSIStorageCapacity per node",
      { timeoutMs: STEP_MS },
    );
    assert.equal(capacities.length, 3);

    const endpoints = new Map<string, string>();
    for (const match of text.matchAll(/^ {2}(.+): (https?:\/\/127\.0\.0\.1:\d+\/metrics)$/gm))
      endpoints.set(match[1]!, match[2]!);
    const token = (await readFile(join(stateDir, "pki", "admin.token"), "utf8")).trim();
    const controllers = endpoints.get("kube-controller-manager (secure port)")!;
    assert.ok(controllers, text);
    const scraped = await scrape(controllers, token);
    assert.equal(scraped.status, 200);
    assert.match(scraped.body, /^workqueue_depth\{name="claims"\} \d+$/m);
    // The PV controller's collector (series appear per class once volumes exist).
    for (const metric of [
      "pv_collector_bound_pv_count",
      "pv_collector_unbound_pv_count",
      "pv_collector_bound_pvc_count",
      "pv_collector_unbound_pvc_count",
      "attachdetach_controller_total_volumes",
    ])
      assert.match(scraped.body, new RegExp(`^# TYPE ${metric} gauge$`, "m"));
    // Delegated authentication and authorization, as kube-controller-manager's secure port.
    assert.equal((await scrape(controllers, undefined)).status, 403);
    assert.equal((await scrape(controllers, "not-a-token")).status, 401);
    assert.equal((await scrape(controllers.replace("/metrics", "/healthz"), undefined)).status, 200);
    // The walkthrough's pod ran on one node: its kubelet timed the mount.
    const mounts = await Promise.all(
      [...endpoints].filter(([what]) => what.startsWith("kubelet ")).map(([, url]) => scrape(url, token)),
    );
    assert.equal(mounts.length, 3);
    assert.ok(mounts.every((m) => m.status === 200));
    assert.ok(
      mounts.some((m) =>
        /^storage_operation_duration_seconds_count\{volume_plugin="kubernetes\.io\/csi:hostpath\.csi\.k8s\.io",operation_name="volume_mount",(?:migrated="false",)?status="success"(?:,migrated="false")?\} [1-9]/m.test(
          m.body,
        ),
      ),
      mounts.map((m) => m.body).join("\n"),
    );
    const provisioner = await scrape(endpoints.get("external-provisioner")!, undefined);
    assert.equal(provisioner.status, 200);
    assert.match(
      provisioner.body,
      /^csi_sidecar_operations_seconds_count\{.*method_name="\/csi\.v1\.Controller\/CreateVolume"/m,
    );
    // The health monitor runs beside hostpath's controller and polls it with ListVolumes.
    const healthMonitor = endpoints.get("external-health-monitor-controller");
    assert.ok(healthMonitor, text);
    await until(
      async () =>
        /^csi_sidecar_operations_seconds_count\{.*method_name="\/csi\.v1\.Controller\/ListVolumes"/m.test(
          (await scrape(healthMonitor, undefined)).body,
        ),
      "the health monitor's ListVolumes",
      { timeoutMs: STEP_MS },
    );
  });

  test("SIGINT tears volumes down before the processes and exits 0; a second up resumes the cluster", async () => {
    await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      metadata: { name: "keep-claim", namespace: "default" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
    });
    await client.create<Pod>(GVR.pods, {
      metadata: { name: "keep-app", namespace: "default" },
      spec: {
        containers: [{ name: "app", image: "busybox" }],
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: "keep-claim" } }],
      },
    });
    await until(podRunning("keep-app"), "keep-app to run", { timeoutMs: STEP_MS });
    const components = await pids(stateDir);
    up!.child.kill("SIGINT");
    const code = await exitWithin(up!, 150_000);
    const text = up!.output();
    assert.equal(code, 0, text);
    assert.match(text, /✓ volumes torn down/);
    assert.match(text, /✓ all processes stopped/);
    for (const [name, pid] of Object.entries(components))
      assert.equal(alive(pid), false, `${name} still runs`);

    up = startUp(stateDir);
    await until(
      () => {
        const output = up!.output();
        if (/✗/.test(output) || up!.child.exitCode !== null) throw new Error(`up failed:\n${output}`);
        return /cluster ready in/.test(output) ? true : undefined;
      },
      "the resumed cluster to be ready",
      { timeoutMs: START_MS },
    );
    assert.match(up.output(), /resuming cluster in/);
    const pod = await client.get<Pod>(GVR.pods, "keep-app", { namespace: "default" });
    assert.equal(pod.status?.phase, "Failed");
    assert.equal(pod.status?.reason, "Terminated");
    const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "keep-claim", {
      namespace: "default",
    });
    assert.equal(claim.status?.phase, "Bound");
    assert.deepEqual(await clusterMounts(stateDir, join(stateDir, "nodes")), []);
  });
});

// A cluster of its own (one node): hostpath started through --driver-command (a script giving
// the controller and node instances their services) with --enable-attach=false, so the driver has no PUBLISH_UNPUBLISH_VOLUME. The CSIDriver still says
// attachRequired, so the attach/detach controller makes a VolumeAttachment, and the attacher
// marks it attached without ControllerPublishVolume and without a finalizer (seed 000).
describe("csikit up with a driver without PUBLISH_UNPUBLISH_VOLUME", { skip: SKIP }, () => {
  let base = "";
  let stateDir = "";
  let up: UpProcess | undefined;
  let client: KubeClient | undefined;

  before(async () => {
    base = await mkdtemp(join(tmpdir(), "csikit-upna-"));
    stateDir = join(base, "state");
    // One controller instance and one node instance per node, as up runs hostpath itself.
    const script = join(base, "driver.sh");
    await writeFile(
      script,
      [
        "#!/bin/sh",
        'if [ "$3" = controller ]; then services="--controller-service=true --node-service=false"',
        'else services="--controller-service=false --node-service=true"; fi',
        `exec "${process.execPath}" "${MAIN}" hostpath --endpoint="$1" --nodeid="$2" $services \\`,
        `  --drivername=hostpath.csi.k8s.io --state-dir="${join(base, "driver")}" \\`,
        `  --allowed-path-roots="${join(stateDir, "nodes")}" --enable-attach=false`,
        "",
      ].join("\n"),
    );
    const driver = `/bin/sh ${script} {endpoint} {nodeid} {mode}`;
    // -v 5: the attacher logs every CSI call it makes, which is what the test looks at.
    up = startUp(stateDir, ["--nodes=1", "--component-v=5", `--driver-command=${driver}`]);
    await until(
      () => {
        const text = up!.output();
        if (/✗/.test(text) || up!.child.exitCode !== null) throw new Error(`up failed:\n${text}`);
        return /cluster ready in/.test(text) ? true : undefined;
      },
      "the cluster to be ready",
      { timeoutMs: START_MS },
    );
    client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "kubeconfig") }) });
  });

  after(async () => {
    client?.close();
    await stopUp(up, stateDir);
    await rm(base, { recursive: true, force: true });
  });

  test("the VolumeAttachment is attached without ControllerPublishVolume and without a finalizer; detach just deletes it", async () => {
    const kube = client!;
    await kube.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      metadata: { name: "plain-claim", namespace: "default" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
    });
    await kube.create<Pod>(GVR.pods, {
      metadata: { name: "plain-app", namespace: "default" },
      spec: {
        containers: [{ name: "app", image: "busybox" }],
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: "plain-claim" } }],
      },
    });
    await until(
      async () => {
        const pod = await kube.get<Pod>(GVR.pods, "plain-app", { namespace: "default" });
        return pod.status?.phase === "Running" ? pod : undefined;
      },
      "plain-app to run",
      { timeoutMs: STEP_MS },
    );
    const claim = await kube.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "plain-claim", {
      namespace: "default",
    });
    const volumeName = claim.spec?.volumeName ?? "";
    const attachment = (await kube.list<VolumeAttachment>(GVR.volumeAttachments)).items.find(
      (a) => a.spec?.source?.persistentVolumeName === volumeName,
    );
    assert.ok(attachment, "the attach/detach controller made a VolumeAttachment (attachRequired)");
    assert.equal(attachment.status?.attached, true);
    assert.deepEqual(attachment.metadata?.finalizers ?? [], [], "no external-attacher finalizer");
    const volume = await kube.get<PersistentVolume>(GVR.persistentVolumes, volumeName);
    assert.ok(
      !(volume.metadata?.finalizers ?? []).some((f) => f.startsWith("external-attacher/")),
      "no external-attacher finalizer on the PV",
    );
    const attacherLog = await readFile(join(stateDir, "logs", "attacher.log"), "utf8");
    assert.match(attacherLog, /ControllerGetCapabilities/, "the attacher asked for the capabilities");
    assert.doesNotMatch(attacherLog, /ControllerPublishVolume/);

    await kube.delete(GVR.pods, "plain-app", { namespace: "default" });
    await kube.delete(GVR.persistentVolumeClaims, "plain-claim", { namespace: "default" });
    await until(
      async () => {
        const left = (await kube.list<VolumeAttachment>(GVR.volumeAttachments)).items.some(
          (a) => a.spec?.source?.persistentVolumeName === volumeName,
        );
        return !left && (await gone(() => kube.get(GVR.persistentVolumes, volumeName))) ? true : undefined;
      },
      "the attachment and the volume to be gone",
      { timeoutMs: STEP_MS },
    );
    assert.doesNotMatch(
      await readFile(join(stateDir, "logs", "attacher.log"), "utf8"),
      /ControllerUnpublishVolume/,
    );
    assert.deepEqual(await clusterMounts(stateDir, join(stateDir, "nodes")), []);
  });
});

describe("csikit up --walkthrough --exit", { skip: SKIP }, () => {
  test("ends on its own with 0 after the walkthrough: nothing keeps the process alive after teardown", async (t) => {
    const base = await mkdtemp(join(tmpdir(), "csikit-ux-"));
    const stateDir = join(base, "s");
    const up = startUp(stateDir, ["--nodes=1", "--walkthrough=expand", "--exit"]);
    t.after(async () => {
      await stopUp(up, stateDir);
      await rm(base, { recursive: true, force: true });
    });
    const timer = setTimeout(() => up.child.kill("SIGKILL"), START_MS);
    const code = await up.exited;
    clearTimeout(timer);
    const text = up.output();
    assert.equal(
      code,
      0,
      `up --exit ended with ${code} (SIGKILL after ${START_MS} ms = it never exited):\n${text}`,
    );
    assert.match(text, /walkthrough done: every step passed/);
    assert.match(text, /all processes stopped/);
    for (const pid of Object.values(await pids(stateDir)))
      assert.ok(!alive(pid), `process ${pid} still alive`);
  });
});

// A driver whose state lives in each process, as upstream hostpath's does: csikit hostpath
// started through --driver-command with a state dir of its own per instance. Only the distributed
// deployment serves it (each node's instance provisions, stages, publishes and snapshots its own
// volumes, through its node's provisioner and snapshotter);
// the walkthrough reads what the node agent reports, never a staging mount. With --component-v=5
// the API server logs every request it serves.
describe("csikit up --distributed with a driver whose state lives in each process", { skip: SKIP }, () => {
  test("the walkthrough passes end to end; --component-v reaches the API server", async (t) => {
    const base = await mkdtemp(join(tmpdir(), "csikit-upd-"));
    const stateDir = join(base, "s");
    const script = join(base, "driver.sh");
    await writeFile(
      script,
      [
        "#!/bin/sh",
        // One process per node serving both services, as upstream's DaemonSet runs it.
        'if [ "$3" != distributed ]; then echo "want mode distributed, got $3" >&2; exit 2; fi',
        `exec "${process.execPath}" "${MAIN}" hostpath --endpoint="$1" --nodeid="$2" \\`,
        "  --controller-service=true --node-service=true --enable-attach=false \\",
        `  --drivername=hostpath.csi.k8s.io --state-dir="${base}/driver-$2" \\`,
        `  --allowed-path-roots="${join(stateDir, "nodes")}/$2"`,
        "",
      ].join("\n"),
    );
    const up = startUp(stateDir, [
      "--nodes=2",
      "--distributed",
      "--component-v=5",
      `--driver-command=/bin/sh ${script} {endpoint} {nodeid} {mode}`,
      "--walkthrough",
      "--exit",
    ]);
    t.after(async () => {
      await stopUp(up, stateDir);
      await rm(base, { recursive: true, force: true });
    });
    const code = await exitWithin(up, START_MS);
    const text = up.output();
    assert.equal(code, 0, text);
    assert.match(text, /distributed: a driver instance and a provisioner and a snapshotter per node/);
    for (const step of [
      /claim walkthrough-claim created and bound: CreateVolume by the provisioner/,
      /no attach step: CSIDriver hostpath.csi.k8s.io has attachRequired=false/,
      /volume staged: NodeStageVolume by the node agent — .*reports it in use/,
      /volume published: NodePublishVolume by the node agent — .*pod Running/,
      sandboxed
        ? /file read back through the second pod \(pods\/exec\)/
        : /file written through the pod's mount, read back/,
      /no growth step: a distributed deployment runs no resizer/,
      // Distributed snapshotting: the content labelled with the volume's node, cut by its snapshotter.
      /VolumeSnapshot walkthrough-node-snapshot of walkthrough-claim readyToUse: CreateSnapshot by its node's snapshotter \(--node-deployment\) — content snapcontent-\S+ managed-by node-[12]/,
      /snapshot deleted: DeleteSnapshot by the node's snapshotter, content snapcontent-\S+ gone/,
      /volume unstaged: NodeUnstageVolume/,
      /claim deleted: DeleteVolume by the provisioner, PV gone/,
      /walkthrough done: every step passed/,
      /all processes stopped/,
    ])
      assert.match(text, step);
    // Each node's instance kept its own record; the walkthrough's volume was one node's only.
    const records = await Promise.all(
      ["node-1", "node-2"].map((node) =>
        readFile(join(base, `driver-${node}`, "controller.json"), "utf8").catch(() => ""),
      ),
    );
    assert.ok(
      records.some((r) => r !== ""),
      "a node instance provisioned",
    );
    // Each node ran its own snapshotter; the snapshot's was the only one to call CreateSnapshot.
    const snapshotterLogs = await Promise.all(
      ["node-1", "node-2"].map((node) =>
        readFile(join(stateDir, "logs", `${node}-snapshotter.log`), "utf8").catch(() => ""),
      ),
    );
    assert.ok(
      snapshotterLogs.every((log) => log !== ""),
      "a snapshotter log per node",
    );
    const apiserverLog = await readFile(join(stateDir, "logs", "apiserver.log"), "utf8");
    assert.match(apiserverLog, /"request" method="GET" path="\/api/);
    for (const pid of Object.values(await pids(stateDir)))
      assert.ok(!alive(pid), `process ${pid} still alive`);
  });
});

describe("csikit up killed with -9", { skip: SKIP }, () => {
  test("every one of its processes notices and stops, without a next up", async (t) => {
    const base = await mkdtemp(join(tmpdir(), "csikit-uk-"));
    const stateDir = join(base, "s");
    const up = startUp(stateDir);
    t.after(async () => {
      await stopUp(up, stateDir);
      await rm(base, { recursive: true, force: true });
    });
    await until(
      () => {
        const text = up.output();
        if (/✗/.test(text) || up.child.exitCode !== null) throw new Error(`up failed:\n${text}`);
        return /cluster ready in/.test(text) ? true : undefined;
      },
      "the cluster to be ready",
      { timeoutMs: START_MS },
    );
    const children = await pids(stateDir);
    assert.ok(Object.keys(children).length >= 18, JSON.stringify(children));
    // The supervisor is the API server's parent (unprivileged, `up` re-ran itself in a namespace).
    const stat = await readFile(`/proc/${children.apiserver}/stat`, "utf8");
    const supervisor = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    process.kill(supervisor, "SIGKILL");
    await until(
      async () => (Object.values(children).some(alive) ? undefined : true),
      "every process of the killed up to stop",
      { timeoutMs: 60_000 },
    );
  });
});

/** Each workload example's data, read through `kubectl exec` where its pods wrote it. */
async function examplesHoldTheirData(kubeconfig: string): Promise<void> {
  const run = (args: string[]) => kubectl(args, { kubeconfig });
  const exec = async (pod: string, command: string[]) => {
    const result = await run(["exec", pod, "--", ...command]);
    assert.equal(result.code, 0, `${pod}: ${result.stderr}`);
    return result.stdout;
  };
  // StatefulSet: claim data-web-<i> made from the template, bound, holding only its own replica's name.
  for (const ordinal of [0, 1, 2]) {
    const claim = await run(["get", "pvc", `data-web-${ordinal}`, "-o", "jsonpath={.status.phase}"]);
    assert.equal(claim.stdout, "Bound", claim.stderr);
    assert.equal(await exec(`web-${ordinal}`, ["cat", "/data/index.html"]), `web-${ordinal}\n`);
  }
  // Deployment: both replicas on one ReadWriteMany claim, each sees the other's line.
  const rollout = await kubectl(["rollout", "status", "deployment/shared-writers", "--timeout=90s"], {
    kubeconfig,
    timeoutMs: STEP_MS,
  });
  assert.equal(rollout.code, 0, rollout.stderr);
  const replicas = (
    await run(["get", "pods", "-l", "app=shared-writers", "-o", "jsonpath={.items[*].metadata.name}"])
  ).stdout
    .split(" ")
    .filter((name) => name !== "");
  assert.equal(replicas.length, 2, replicas.join(" "));
  for (const pod of replicas)
    await until(
      async () => {
        const lines = (await exec(pod, ["cat", "/shared/replicas"])).split("\n");
        return replicas.every((name) => lines.includes(name));
      },
      `${pod} to see both replicas' lines`,
      { timeoutMs: STEP_MS },
    );
  // Job then verifier: the Job completed, the verifier reads what it wrote.
  const complete = await kubectl(["wait", "--for=condition=complete", "job/result-writer", "--timeout=90s"], {
    kubeconfig,
    timeoutMs: STEP_MS,
  });
  assert.equal(complete.code, 0, complete.stderr);
  assert.equal(await exec("result-verifier", ["cat", "/results/answer"]), "42\n");
  await until(
    async () => (await run(["logs", "result-verifier"])).stdout === "verified: 42\n",
    "the verifier's log line",
    { timeoutMs: STEP_MS },
  );
  // Generic ephemeral volume: the claim <pod>-<volume>, owned by the pod, mounted where the pod wrote.
  const owner = await run([
    "get",
    "pvc",
    "scratch-app-scratch",
    "-o",
    "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}",
  ]);
  assert.equal(owner.stdout, "Pod/scratch-app", owner.stderr);
  assert.equal(await exec("scratch-app", ["cat", "/scratch/hello"]), "scratch-app\n");
}
