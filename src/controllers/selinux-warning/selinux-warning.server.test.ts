// selinux-warning-controller against the real API server, under the controllers' identity and
// RBAC (deploy/rbac/, user system:kube-controller-manager): pods sharing a CSI volume whose
// CSIDriver has seLinuxMount: true, with different SELinux levels or change policies, each get
// upstream's events and series of the conflict metric (gone with the pods); the loop starts only when named and only with SELinuxChangePolicy on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, resolveKubeFeatureGates, type CSIDriver, type Pod } from "../../api/index.ts";
import {
  NS,
  eventsFor,
  pv,
  pvc,
  runLoops,
  startControllersCluster,
  waitClaimBound,
  waitForEvent,
} from "../../../test/harness/controllers.ts";
import { until } from "../../../test/harness/until.ts";
import { CONTROLLERS_USER } from "../../../test/harness/controllers.ts";
import { Registry } from "../../kube/index.ts";
import { ControllerVolumeMetrics } from "../metrics.ts";
import { SELINUX_WARNING_COMPONENT } from "./index.ts";

const METRIC = "selinux_warning_controller_selinux_volume_conflict";

const DRIVER = "selinux.csi.k8s.io";

function labelledPod(name: string, level: string, changePolicy?: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: {
      securityContext: {
        seLinuxOptions: { level },
        ...(changePolicy ? { seLinuxChangePolicy: changePolicy } : {}),
      },
      containers: [{ name: "c", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: "shared" } }],
    },
  };
}

test("selinux-warning-controller: pods sharing a volume with different labels or policies get conflict events", async (t) => {
  const cluster = await startControllersCluster(t);
  const { admin } = cluster;
  const registry = new Registry();
  const loops = runLoops(cluster.controllers, {
    controllers: ["persistentvolume-binder-controller", "selinux-warning-controller"],
    volumeMetrics: new ControllerVolumeMetrics(registry),
  });
  const series = async (): Promise<string[]> =>
    (await registry.getSingleMetricAsString(METRIC)).split("\n").filter((line) => line.startsWith(METRIC));
  t.after(() => loops.stop());

  await admin.create<CSIDriver>(GVR.csiDrivers, {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSIDriver",
    metadata: { name: DRIVER },
    spec: { attachRequired: false, seLinuxMount: true },
  });
  await admin.create(
    GVR.persistentVolumes,
    pv("sel-v", {
      storageClassName: "sel",
      accessModes: ["ReadWriteMany"],
      csi: { driver: DRIVER, volumeHandle: "h1" },
    }),
  );
  await admin.create(
    GVR.persistentVolumeClaims,
    pvc("shared", { storageClassName: "sel", accessModes: ["ReadWriteMany"] }),
  );
  await waitClaimBound(admin, "shared", 60_000);

  await admin.create(GVR.pods, labelledPod("p1", "s0:c1,c2"));
  await admin.create(GVR.pods, labelledPod("p2", "s0:c3,c4"));
  const onP1 = await waitForEvent(admin, "p1", "SELinuxLabelConflict");
  const onP2 = await waitForEvent(admin, "p2", "SELinuxLabelConflict");
  assert.equal(
    onP1.message,
    'SELinuxLabel ":::s0:c1,c2" conflicts with pod p2 that uses the same volume as this pod with SELinuxLabel ' +
      '":::s0:c3,c4". If both pods land on the same node, only one of them may access the volume.',
  );
  assert.equal(
    onP2.message,
    'SELinuxLabel ":::s0:c3,c4" conflicts with pod p1 that uses the same volume as this pod with SELinuxLabel ' +
      '":::s0:c1,c2". If both pods land on the same node, only one of them may access the volume.',
  );
  assert.equal(onP1.type, "Normal");
  assert.equal(onP1.source?.component, SELINUX_WARNING_COMPONENT);
  assert.equal(onP1.involvedObject.kind, "Pod");

  // A pod that opted into Recursive relabelling: a change-policy conflict with both (no label
  // conflict, it mounts without a context).
  await admin.create(GVR.pods, labelledPod("p3", "s0:c1,c2", "Recursive"));
  const policy = await until(async () => {
    const events = (await eventsFor(admin, "p3")).filter(
      (event) => event.reason === "SELinuxChangePolicyConflict",
    );
    return events.length >= 2 ? events : undefined;
  }, "two SELinuxChangePolicyConflict events on p3");
  assert.deepEqual(
    policy.map((event) => event.message).sort(),
    ["p1", "p2"].map(
      (other) =>
        `SELinuxChangePolicy "Recursive" conflicts with pod ${other} that uses the same volume as this pod with ` +
        'SELinuxChangePolicy "MountOption". If both pods land on the same node, only one of them may access the volume.',
    ),
  );
  await waitForEvent(admin, "p1", "SELinuxChangePolicyConflict");
  assert.ok(
    (await eventsFor(admin, "p3")).every((event) => event.reason !== "SELinuxLabelConflict"),
    "p3 mounts without -o context: no label conflict",
  );

  // Two containers giving the volume different labels: a Warning on that pod, not tracked.
  const twice = labelledPod("p4", "s0:c1,c2");
  twice.spec!.containers.push({
    name: "other",
    image: "busybox",
    securityContext: { seLinuxOptions: { level: "s0:c9" } },
    volumeMounts: [{ name: "data", mountPath: "/other" }],
  });
  await admin.create(GVR.pods, twice);
  const multiple = await waitForEvent(admin, "p4", "MultipleSELinuxLabels");
  assert.equal(multiple.type, "Warning");
  assert.equal(
    multiple.message,
    'Volume "data" is mounted twice with different SELinux labels inside this pod',
  );

  const metric = await series();
  assert.ok(
    metric.includes(
      `${METRIC}{property="SELinuxLabel",pod1_namespace="${NS}",pod1_name="p1",pod1_value=":::s0:c1,c2",` +
        `pod2_namespace="${NS}",pod2_name="p2",pod2_value=":::s0:c3,c4"} 1`,
    ),
    metric.join("\n"),
  );
  assert.equal(
    metric.filter((line) => line.includes('property="SELinuxChangePolicy"')).length,
    4,
    metric.join("\n"),
  );

  // The conflicting pods go: the conflicts leave the metric (the cache forgets deleted pods).
  await admin.delete(GVR.pods, "p2", { namespace: NS });
  await admin.delete(GVR.pods, "p3", { namespace: NS });
  await until(async () => (await series()).length === 0 || undefined, "no conflict series left");

  const forbidden = cluster.rbac.audit.filter(
    (event) =>
      event.user.username === CONTROLLERS_USER &&
      event.annotations["authorization.k8s.io/decision"] === "forbid",
  );
  assert.deepEqual(forbidden, [], "every call allowed by the controllers' RBAC");
});

test("selinux-warning-controller: off under '*', and off without SELinuxChangePolicy even when named", async (t) => {
  const cluster = await startControllersCluster(t);
  const started = async (
    controllers: string[],
    featureGates?: Record<string, boolean>,
  ): Promise<readonly string[]> => {
    let names: readonly string[] = [];
    const loops = runLoops(cluster.controllers, {
      controllers,
      onStart: (list) => (names = list),
      ...(featureGates ? { knobs: { featureGates } } : {}),
    });
    await until(async () => names.length > 0 || undefined, "loops started");
    await loops.stop();
    return names;
  };
  assert.ok(!(await started(["*"])).includes("selinux-warning-controller"), "disabled by default");
  assert.ok((await started(["*", "selinux-warning-controller"])).includes("selinux-warning-controller"));
  const off = resolveKubeFeatureGates("1.35", { SELinuxChangePolicy: "false" });
  assert.deepEqual(
    await started(["scheduler", "selinux-warning-controller"], off),
    ["scheduler"],
    "required gate off: not started",
  );
});
