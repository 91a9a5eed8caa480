// runControllers against the real API server: a restart in the middle of provisioning and of
// a bind converges without repeating any write, and with leader election two instances
// share the kube-controller-manager Lease so only one runs the loops at a time.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ANNOTATIONS, GVR, type PersistentVolume, type PersistentVolumeClaim } from "../api/index.ts";
import type { KubeClient, Lease } from "../kube/index.ts";
import { LEASES } from "../kube/index.ts";
import {
  DRIVER,
  NS,
  claimPhase,
  eventsFor,
  getOrUndefined,
  pv,
  pvc,
  runLoops,
  startTestServer,
  storageClass,
  waitClaimBound,
  waitForEvent,
  waitVolumePhase,
  type TestServer,
} from "../../test/harness/controllers.ts";
import { isControllerEnabled, validateControllerNames, CONTROLLER_LOOPS } from "./run.ts";
import { until } from "../../test/harness/until.ts";

let env: TestServer;
let client: KubeClient;
before(async () => {
  env = await startTestServer();
  client = env.client();
});
after(async () => {
  await env?.stop();
});

const PV_ONLY = ["persistentvolume-binder-controller", "pvc-protection", "pv-protection"];

async function resourceVersions(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of ["c-rs-dyn", "c-rs-half"])
    out[`pvc/${name}`] = (await claimPhase(client, name))?.metadata?.resourceVersion ?? "";
  for (const name of ["pvc-rs-dyn", "rs-half"])
    out[`pv/${name}`] =
      (await getOrUndefined<PersistentVolume>(client, GVR.persistentVolumes, name))?.metadata
        ?.resourceVersion ?? "";
  return out;
}

/** A fresh claim and volume bound by the running loops: every key queued before them was handled. */
async function sentinel(name: string): Promise<void> {
  await client.create(GVR.persistentVolumes, pv(`v-${name}`, { storageClassName: name }));
  await waitVolumePhase(client, `v-${name}`, "Available");
  await client.create(GVR.persistentVolumeClaims, pvc(`c-${name}`, { storageClassName: name }));
  await waitClaimBound(client, `c-${name}`);
  await waitVolumePhase(client, `v-${name}`, "Bound");
}

test("restart mid-provisioning and mid-bind: state converges, nothing is written twice", async () => {
  let loops = runLoops(env.client(), { controllers: PV_ONLY });
  await client.create(GVR.storageClasses, storageClass("rs-imm"));
  const claim = await client.create<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    pvc("c-rs-dyn", { storageClassName: "rs-imm" }),
  );
  await waitForEvent(client, "c-rs-dyn", "ExternalProvisioning");
  await loops.stop();

  // While the controller is down: the provisioner finishes, and a bind is found half done
  // (the volume already points at its claim, the claim knows nothing yet) as after a crash.
  await client.create(
    GVR.persistentVolumes,
    pv(
      "pvc-rs-dyn",
      {
        storageClassName: "rs-imm",
        persistentVolumeReclaimPolicy: "Delete",
        claimRef: {
          kind: "PersistentVolumeClaim",
          namespace: NS,
          name: "c-rs-dyn",
          uid: claim.metadata.uid!,
        },
      },
      { annotations: { [ANNOTATIONS.provisionedBy.key]: DRIVER } },
    ),
  );
  const half = await client.create<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    pvc("c-rs-half", { storageClassName: "rs-half" }),
  );
  await client.create(
    GVR.persistentVolumes,
    pv(
      "rs-half",
      {
        storageClassName: "rs-half",
        claimRef: {
          kind: "PersistentVolumeClaim",
          namespace: NS,
          name: "c-rs-half",
          uid: half.metadata.uid!,
        },
      },
      { annotations: { [ANNOTATIONS.boundByController.key]: "yes" } },
    ),
  );

  loops = runLoops(env.client(), { controllers: PV_ONLY });
  assert.equal((await waitClaimBound(client, "c-rs-dyn")).spec?.volumeName, "pvc-rs-dyn");
  const healed = await waitClaimBound(client, "c-rs-half");
  assert.equal(healed.spec?.volumeName, "rs-half");
  assert.equal(healed.metadata?.annotations?.[ANNOTATIONS.bindCompleted.key], "yes");
  await waitVolumePhase(client, "rs-half", "Bound");
  await sentinel("rs-s1");
  const settled = await resourceVersions();
  const provisioningEvents = (await eventsFor(client, "c-rs-dyn")).map((e) => `${e.reason}×${e.count}`);
  await loops.stop();

  // A second restart over converged state: once it has handled everything queued before a new
  // sentinel, not one of the old objects was written again.
  loops = runLoops(env.client(), { controllers: PV_ONLY });
  try {
    await sentinel("rs-s2");
    assert.deepEqual(await resourceVersions(), settled);
    assert.deepEqual(
      (await eventsFor(client, "c-rs-dyn")).map((e) => `${e.reason}×${e.count}`),
      provisioningEvents,
    );
  } finally {
    await loops.stop();
  }
});

test("leader election: two instances, one runs the loops; the other takes over when it stops", async () => {
  const started: string[] = [];
  const instance = (identity: string): ReturnType<typeof runLoops> =>
    runLoops(env.client(), {
      controllers: PV_ONLY,
      leaderElection: {
        enabled: true,
        identity,
        leaseDurationMs: 3000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 200,
      },
      onStart: () => started.push(identity),
    });
  const first = instance("first");
  const firstLeads = await until(() => started.length > 0 && started[0], "a leader");
  const second = instance("second");
  let secondStopped = false;
  try {
    const lease = await client.get<Lease>(LEASES, "kube-controller-manager", { namespace: "kube-system" });
    assert.equal(lease.spec?.holderIdentity, firstLeads);
    await sentinel("le-1");
    assert.deepEqual(started, ["first"], "only the leader runs the loops");

    await first.stop();
    await until(() => started.includes("second"), "the standby takes over");
    await sentinel("le-2");
    const lease2 = await client.get<Lease>(LEASES, "kube-controller-manager", { namespace: "kube-system" });
    assert.equal(lease2.spec?.holderIdentity, "second");
    await second.stop();
    secondStopped = true;
  } finally {
    await first.stop();
    if (!secondStopped) await second.stop();
  }
});

test("--controllers: KCM semantics over names and aliases; unknown names are rejected", () => {
  const byName = (name: string) => CONTROLLER_LOOPS.find((loop) => loop.name === name)!;
  const gc = byName("garbage-collector-controller");
  const binder = byName("persistentvolume-binder-controller");
  assert.equal(isControllerEnabled(gc, ["*"]), true);
  assert.equal(isControllerEnabled(gc, ["*", "-garbage-collector-controller"]), false);
  assert.equal(isControllerEnabled(gc, ["-garbagecollector", "*"]), false);
  assert.equal(isControllerEnabled(gc, ["persistentvolume-binder"]), false);
  assert.equal(isControllerEnabled(binder, ["persistentvolume-binder"]), true);
  assert.equal(
    isControllerEnabled(binder, [
      "persistentvolume-binder-controller",
      "-persistentvolume-binder-controller",
    ]),
    true,
  );
  // The workload loops answer to KCM's names (statefulset, ephemeral-volume) and are on by default.
  for (const [name, alias] of [
    ["statefulset-controller", "statefulset"],
    ["ephemeral-volume-controller", "ephemeral-volume"],
  ] as const) {
    const loop = byName(name);
    assert.equal(isControllerEnabled(loop, ["*"]), true, name);
    assert.equal(isControllerEnabled(loop, [alias, "garbage-collector-controller"]), true, alias);
    assert.equal(isControllerEnabled(loop, ["*", `-${alias}`]), false, `-${alias}`);
    assert.equal(isControllerEnabled(loop, ["garbage-collector-controller"]), false, name);
  }
  assert.throws(
    () => validateControllerNames(CONTROLLER_LOOPS, ["*", "-nope"]),
    /"nope" is not in the list of known controllers/,
  );
});

test("a claim waiting for a volume binds as soon as one becomes Available, without waiting for the resync", async () => {
  const loops = runLoops(env.client(), {
    controllers: PV_ONLY,
    knobs: { pvClaimBinderSyncPeriodMs: 600_000 },
  });
  try {
    await client.create(GVR.persistentVolumeClaims, pvc("c-late-pv", { storageClassName: "late-pv" }));
    await waitForEvent(client, "c-late-pv", "ProvisioningFailed");
    await client.create(GVR.persistentVolumes, pv("late-pv", { storageClassName: "late-pv" }));
    assert.equal((await waitClaimBound(client, "c-late-pv")).spec?.volumeName, "late-pv");
  } finally {
    await loops.stop();
  }
});
