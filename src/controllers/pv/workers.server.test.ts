// The PV binder with several workers per queue against the real embedded API server: many
// claims created at once race for fewer matching static volumes. Every claim picks the same
// smallest volume from its cache, so workers collide on the volume's resourceVersion-guarded
// update; the end state must still be upstream's: each volume bound to exactly one claim,
// each bound claim naming a different volume, the others Pending with nothing half-written.
// Also: a bind whose claim changed under it (409 on the claim write) redoes that write once on
// a fresh read, and never when the fresh claim names another volume.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ANNOTATIONS, GVR, type PersistentVolume, type PersistentVolumeClaim } from "../../api/index.ts";
import { EventRecorder, Store, isConflict, type KubeClient } from "../../kube/index.ts";
import { silentLogger } from "../../base/index.ts";
import { LatestObjects } from "../common/index.ts";
import { resolveFeatureGates } from "../../migration/index.ts";
import type { PvSyncContext } from "./context.ts";
import { bind } from "./writes.ts";
import {
  NS,
  eventsFor,
  pv,
  pvc,
  runLoops,
  startTestServer,
  waitVolumePhase,
  type TestServer,
} from "../../../test/harness/controllers.ts";
import { until } from "../../../test/harness/until.ts";

const WORKERS = 4;
const CLAIMS = 16;
const VOLUMES = 5;

let env: TestServer;
let client: KubeClient;
let loops: { stop: () => Promise<void> } | undefined;

before(async () => {
  env = await startTestServer();
  client = env.client();
});
after(async () => {
  await loops?.stop();
  await env?.stop();
});

test(`${CLAIMS} claims racing for ${VOLUMES} static volumes on ${WORKERS} workers: each volume bound exactly once`, async () => {
  // Same size and class everywhere: every claim's best match is the same volume at first.
  for (let i = 0; i < VOLUMES; i++)
    await client.create(GVR.persistentVolumes, pv(`race-pv-${i}`, { size: "1Gi", storageClassName: "race" }));
  loops = runLoops(env.client(), {
    controllers: ["persistentvolume-binder-controller"],
    knobs: { pvClaimBinderSyncPeriodMs: 300, pvBinderWorkers: WORKERS },
  });
  for (let i = 0; i < VOLUMES; i++) await waitVolumePhase(client, `race-pv-${i}`, "Available");
  const names = Array.from({ length: CLAIMS }, (_, i) => `race-${i}`);
  await Promise.all(
    names.map((name) =>
      client.create(GVR.persistentVolumeClaims, pvc(name, { size: "1Gi", storageClassName: "race" })),
    ),
  );

  // Settled: every volume Bound, and every claim left over has been told there is nothing for it
  // (class "race" has no StorageClass object) at least twice, i.e. synced again after the
  // volumes were all taken.
  await until(async () => {
    const volumes = (await client.list<PersistentVolume>(GVR.persistentVolumes)).items;
    if (volumes.filter((v) => v.status?.phase === "Bound").length !== VOLUMES) return false;
    const claims = (await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, { namespace: NS }))
      .items;
    const pending = claims.filter((c) => !c.spec?.volumeName);
    if (pending.length !== CLAIMS - VOLUMES) return false;
    for (const claim of pending) {
      const failed = (await eventsFor(client, claim.metadata.name!)).find(
        (e) => e.reason === "ProvisioningFailed",
      );
      if ((failed?.count ?? 0) < 2) return false;
    }
    return true;
  }, "the race to settle");

  const volumes = (await client.list<PersistentVolume>(GVR.persistentVolumes)).items;
  const claims = (await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, { namespace: NS }))
    .items;
  const bound = claims.filter((c) => c.spec?.volumeName);
  assert.equal(bound.length, VOLUMES, "one claim per volume");
  assert.equal(new Set(bound.map((c) => c.spec?.volumeName)).size, VOLUMES, "no volume named by two claims");
  for (const claim of bound) {
    const volume = volumes.find((v) => v.metadata?.name === claim.spec?.volumeName);
    assert.ok(volume, `volume of ${claim.metadata?.name}`);
    assert.equal(volume.spec?.claimRef?.uid, claim.metadata?.uid, `${volume.metadata?.name} points back`);
    assert.equal(volume.status?.phase, "Bound");
    assert.equal(claim.status?.phase, "Bound");
    assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.bindCompleted.key], "yes");
    assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.boundByController.key], "yes");
  }
  for (const claim of claims.filter((c) => !c.spec?.volumeName)) {
    assert.equal(claim.status?.phase, "Pending", `${claim.metadata?.name} Pending`);
    assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.bindCompleted.key], undefined);
    assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.boundByController.key], undefined);
    // No volume points at a claim that does not name it back.
    assert.ok(!volumes.some((v) => v.spec?.claimRef?.uid === claim.metadata?.uid));
  }
});

test("a worker count that is not a positive integer is refused, naming it", async () => {
  const stopped = runLoops(env.client(), {
    controllers: ["persistentvolume-binder-controller"],
    knobs: { pvBinderWorkers: 0 },
  });
  await assert.rejects(stopped.done, /workers must be a positive integer, got 0/);
});

/** A sync context over empty caches (the bind under test gets its objects passed in). */
function syncContext(): PvSyncContext {
  const signal = new AbortController().signal;
  return {
    client,
    recorder: new EventRecorder({ client, component: "persistentvolume-controller" }),
    logger: silentLogger,
    signal,
    volumes: new LatestObjects(new Store<PersistentVolume>()),
    claims: new LatestObjects(new Store<PersistentVolumeClaim>()),
    classes: new Store(),
    pods: new Store(),
    nodes: new Store(),
    featureGates: resolveFeatureGates({}),
    enqueueClaim: () => {},
    enqueueVolume: () => {},
    now: () => Date.now(),
  };
}

/** A claim and a volume provisioned for it, then the claim changed by someone else. */
async function provisionedPair(
  name: string,
): Promise<{ stale: PersistentVolumeClaim; volume: PersistentVolume }> {
  // No binder running: the bind under test is the only one.
  await loops?.stop();
  loops = undefined;
  const stale = await client.create<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    pvc(name, { size: "1Gi", storageClassName: "fresh" }),
  );
  const volume = await client.create<PersistentVolume>(
    GVR.persistentVolumes,
    pv(`${name}-pv`, {
      size: "1Gi",
      storageClassName: "fresh",
      claimRef: {
        kind: "PersistentVolumeClaim",
        apiVersion: "v1",
        namespace: NS,
        name,
        uid: stale.metadata.uid!,
      },
    }),
  );
  // As the provisioner removing its finalizer right after creating the volume.
  await client.patch(
    GVR.persistentVolumeClaims,
    name,
    { metadata: { annotations: { "example.com/touched": "yes" } } },
    { namespace: NS },
  );
  return { stale, volume };
}

test("a bind whose claim changed meanwhile writes on the fresh claim instead of failing", async () => {
  const { stale, volume } = await provisionedPair("fresh-1");
  await bind(syncContext(), volume, stale);
  const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "fresh-1", {
    namespace: NS,
  });
  assert.equal(claim.spec?.volumeName, "fresh-1-pv");
  assert.equal(claim.status?.phase, "Bound");
  assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.bindCompleted.key], "yes");
  assert.equal(claim.metadata?.annotations?.["example.com/touched"], "yes", "the other writer's change kept");
  const bound = await client.get<PersistentVolume>(GVR.persistentVolumes, "fresh-1-pv");
  assert.equal(bound.status?.phase, "Bound");
});

test("a bind whose claim now names another volume fails with the conflict and leaves the claim alone", async () => {
  const { stale, volume } = await provisionedPair("fresh-2");
  await client.patch(
    GVR.persistentVolumeClaims,
    "fresh-2",
    { spec: { volumeName: "elsewhere" } },
    { namespace: NS },
  );
  await assert.rejects(bind(syncContext(), volume, stale), (error) => isConflict(error));
  const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "fresh-2", {
    namespace: NS,
  });
  assert.equal(claim.spec?.volumeName, "elsewhere");
  assert.equal(claim.metadata?.annotations?.[ANNOTATIONS.bindCompleted.key], undefined);
  assert.notEqual(claim.status?.phase, "Bound");
});
