// The PVC Unused condition (KEP-5541) from the real `csikit controllers` process, as `csikit up`
// runs it (its own identity, deploy/rbac/), at two --kubernetes-version values: 1.36 (gate
// alpha, off: no condition ever) and 1.37 (beta, on: True when no pod uses the Bound claim,
// False while a pending pod references it, True again once that pod Succeeded). Both runs take
// the same steps; the deletion of a marker claim afterwards (the same loop drops its finalizer)
// proves the loop has worked through everything before, so "no condition" at 1.36 is an
// observation, not a timeout. The audit log shows one status write per transition and no 403.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type PersistentVolumeClaim, type Pod } from "../../api/index.ts";
import {
  CONTROLLERS_USER,
  NS,
  claimPhase,
  pod,
  pv,
  pvc,
  startControllersCluster,
  waitClaimBound,
  waitVolumePhase,
} from "../../../test/harness/controllers.ts";
import { spawnComponent } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";
import { PVC_UNUSED } from "./pvc-unused.ts";

const unused = (claim: PersistentVolumeClaim | undefined) =>
  claim?.status?.conditions?.find((condition) => condition.type === PVC_UNUSED.type);

async function waitUnused(
  admin: Parameters<typeof claimPhase>[0],
  name: string,
  status: "True" | "False",
): Promise<NonNullable<ReturnType<typeof unused>>> {
  return until(async () => {
    const condition = unused(await claimPhase(admin, name));
    return condition?.status === status ? condition : undefined;
  }, `claim ${name} Unused=${status}`);
}

for (const version of ["1.36", "1.37"] as const) {
  const on = version === "1.37";
  test(`controllers --kubernetes-version=${version}: the PVC Unused condition is ${on ? "kept" : "absent (gate off)"}`, async (t) => {
    const cluster = await startControllersCluster(t);
    const { admin } = cluster;
    spawnComponent(t, {
      name: `controllers-${version}`,
      subcommand: "controllers",
      args: [
        `--kubeconfig=${cluster.controllersKubeconfig}`,
        `--kubernetes-version=${version}`,
        "--controllers=persistentvolume-binder-controller,persistentvolumeclaim-protection-controller",
        "--leader-elect=false",
        "--secure-port=0",
      ],
    });

    await admin.create(GVR.persistentVolumes, pv("unused-v", { storageClassName: "unused" }));
    await waitVolumePhase(admin, "unused-v", "Available");
    await admin.create(GVR.persistentVolumeClaims, pvc("data", { storageClassName: "unused" }));
    await waitClaimBound(admin, "data", 60_000);
    const first = on ? await waitUnused(admin, "data", "True") : undefined;
    if (first) {
      assert.equal(first.reason, PVC_UNUSED.unused.reason);
      assert.equal(first.message, PVC_UNUSED.unused.message);
      assert.ok(first.lastTransitionTime, "transition time set");
    }

    // A pod that is not even scheduled references the claim: in use.
    await admin.create(GVR.pods, pod("user", "data"));
    const used = on ? await waitUnused(admin, "data", "False") : undefined;
    if (used) {
      assert.equal(used.reason, PVC_UNUSED.used.reason);
      assert.equal(used.message, PVC_UNUSED.used.message);
    }

    // The pod finishes (its object stays): unused again.
    const current = await admin.get<Pod>(GVR.pods, "user", { namespace: NS });
    await admin.updateStatus(GVR.pods, { ...current, status: { ...current.status, phase: "Succeeded" } });
    const again = on ? await waitUnused(admin, "data", "True") : undefined;
    if (again && first)
      assert.ok(Date.parse(again.lastTransitionTime!) >= Date.parse(first.lastTransitionTime!));

    // Barrier: the same loop (one worker, FIFO queue) drops the finalizer of a deleted marker
    // claim only after the events above were handled.
    await admin.create(GVR.persistentVolumeClaims, pvc("marker", { storageClassName: "none" }));
    await admin.delete(GVR.persistentVolumeClaims, "marker", { namespace: NS });
    await until(async () => (await claimPhase(admin, "marker")) === undefined, "marker claim gone", {
      timeoutMs: 60_000,
    });

    const claim = await claimPhase(admin, "data");
    const condition = unused(claim);
    if (on) assert.equal(condition?.status, "True", "unused after the pod finished");
    else
      assert.equal(
        condition,
        undefined,
        `no Unused condition at ${version}: ${JSON.stringify(claim?.status)}`,
      );

    const byControllers = cluster.rbac.audit.filter((event) => event.user.username === CONTROLLERS_USER);
    assert.deepEqual(
      byControllers.filter((event) => event.annotations["authorization.k8s.io/decision"] === "forbid"),
      [],
      "every call allowed by the controllers' RBAC",
    );
    const statusWrites = byControllers.filter(
      (event) =>
        event.objectRef?.resource === "persistentvolumeclaims" &&
        event.objectRef.name === "data" &&
        event.objectRef.subresource === "status" &&
        event.verb === "update" &&
        event.responseStatus.code === 200,
    );
    // The binder writes phase Bound once; each transition of the condition is one write more.
    const binderWrites = statusWrites.length - (on ? 3 : 0);
    assert.ok(binderWrites >= 1 && binderWrites <= 2, `status writes of the claim: ${statusWrites.length}`);
  });
}
