// Restore paths of the provisioner under its own ServiceAccount and deploy/rbac/ (as `csikit up`
// runs it), each checked against upstream external-provisioner v6.3's getSnapshotSource: a
// member of a group snapshot restores as any VolumeSnapshot; --prevent-volume-mode-conversion
// reads the content's allow-volume-mode-change annotation as Go's ParseBool (absent, false,
// unparsable: refused with upstream's three messages; true, or the flag off: allowed); a
// snapshot being deleted is restored from only while it holds this provisioner's finalizer;
// a cross-namespace source needs CrossNamespaceVolumeDataSource and a ReferenceGrant
// (gateway.networking.k8s.io/v1beta1, served from this test's fixture CRD; the Role that reads
// grants is upstream's opt-in rule, granted here as a user enabling the gate does).

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { GVR } from "../../api/index.ts";
import { RBAC_DIR, readManifests, type Manifest } from "../../cluster/index.ts";
import {
  STUB,
  createClaim,
  createClass,
  events,
  runProvisioner,
  startStub,
  waitForVolume,
  type Cluster,
} from "../../../test/harness/provisioner.ts";
import { describeEvent, forbidden, startRbacCluster, type RbacCluster } from "../../../test/harness/rbac.ts";
import { installSnapshotCrds, writeReadySnapshot } from "../../../test/harness/snapshots.ts";
import { until } from "../../../test/harness/until.ts";

const SNAPSHOT_SOURCE = "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection";
const PROVISIONER_USER = "system:serviceaccount:default:csi-provisioner";
const MiB = 1 << 20;

/** The gateway API's ReferenceGrant CRD (v1beta1 served), as far as the provisioner reads it. */
const REFERENCE_GRANT_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: {
    name: "referencegrants.gateway.networking.k8s.io",
    annotations: { "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/1538" },
  },
  spec: {
    group: "gateway.networking.k8s.io",
    names: {
      kind: "ReferenceGrant",
      listKind: "ReferenceGrantList",
      plural: "referencegrants",
      singular: "referencegrant",
      shortNames: ["refgrant"],
    },
    scope: "Namespaced",
    versions: [
      {
        name: "v1beta1",
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: {
                type: "object",
                required: ["from", "to"],
                properties: {
                  from: {
                    type: "array",
                    items: {
                      type: "object",
                      required: ["group", "kind", "namespace"],
                      properties: {
                        group: { type: "string" },
                        kind: { type: "string" },
                        namespace: { type: "string" },
                      },
                    },
                  },
                  to: {
                    type: "array",
                    items: {
                      type: "object",
                      required: ["group", "kind"],
                      properties: {
                        group: { type: "string" },
                        kind: { type: "string" },
                        name: { type: "string" },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

/** upstream's opt-in rule (commented out in its rbac.yaml) for drivers using cross-namespace sources. */
const REFERENCE_GRANT_READER: Manifest[] = [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "external-provisioner-referencegrants" },
    rules: [
      {
        apiGroups: ["gateway.networking.k8s.io"],
        resources: ["referencegrants"],
        verbs: ["get", "list", "watch"],
      },
    ],
  },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "external-provisioner-referencegrants" },
    subjects: [{ kind: "ServiceAccount", name: "csi-provisioner", namespace: "default" }],
    roleRef: {
      kind: "ClusterRole",
      name: "external-provisioner-referencegrants",
      apiGroup: "rbac.authorization.k8s.io",
    },
  },
];

async function underRole(
  t: TestContext,
  extra: Manifest[] = [],
): Promise<{ rbac: RbacCluster; cluster: Cluster; stub: Awaited<ReturnType<typeof startStub>> }> {
  const rbac = await startRbacCluster(t, {
    admission: [],
    manifests: [...(await readManifests(RBAC_DIR)), ...extra],
  });
  const cluster: Cluster = {
    server: rbac.server,
    faults: rbac.faults,
    kubeconfig: await rbac.serviceAccountKubeconfig("default", "csi-provisioner"),
    client: rbac.admin,
    dir: rbac.dir,
  };
  const stub = await startStub(t, rbac.dir);
  await installSnapshotCrds(rbac.admin);
  await createClass(cluster, "sc", STUB);
  return { rbac, cluster, stub };
}

const fromSnapshot = (name: string, namespace?: string) =>
  namespace === undefined
    ? { dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name } }
    : { dataSourceRef: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name, namespace } };

async function failure(cluster: Cluster, claim: string): Promise<string> {
  const event = await until(
    async () =>
      (await events(cluster)).find(
        (e) => e.reason === "ProvisioningFailed" && e.involvedObject.name === claim,
      ),
    `ProvisioningFailed for ${claim}`,
  );
  return event.message ?? "";
}

test("restore from a group snapshot's member, and volume-mode changes as the content's annotation allows", async (t) => {
  const { rbac, cluster, stub } = await underRole(t);
  await writeReadySnapshot(rbac.admin, {
    name: "member-1",
    driver: STUB,
    handle: "h-member-1",
    sizeBytes: MiB,
    groupSnapshotName: "group-1",
  });
  const modes: [string, boolean | string | undefined][] = [
    ["absent", undefined],
    ["false", "false"],
    ["junk", "maybe"],
    ["allowed", "T"],
  ];
  for (const [name, allow] of modes)
    await writeReadySnapshot(rbac.admin, {
      name,
      driver: STUB,
      handle: `h-${name}`,
      sizeBytes: MiB,
      ...(allow !== undefined ? { allowModeChange: allow } : {}),
    });
  runProvisioner(t, cluster, stub.server.path);

  const member = await createClaim(cluster, "from-member", STUB, fromSnapshot("member-1"));
  await waitForVolume(cluster, member);
  assert.ok(stub.creates.some((c) => c.volumeContentSource?.snapshot?.snapshotId === "h-member-1"));

  const claims = new Map<string, Awaited<ReturnType<typeof createClaim>>>();
  for (const [name] of modes)
    claims.set(
      name,
      await createClaim(cluster, `block-${name}`, STUB, { volumeMode: "Block", ...fromSnapshot(name) }),
    );
  const prefix =
    'failed to provision volume with StorageClass "sc": requested volume default/block-%s modifies the mode of the source volume but does not have permission to do so. ';
  const want = (name: string, rest: string) => prefix.replace("%s", name) + rest;
  assert.equal(
    await failure(cluster, "block-absent"),
    want(
      "absent",
      "snapshot.storage.kubernetes.io/allow-volume-mode-change annotation is not present on snapshotcontent content-absent",
    ),
  );
  assert.equal(
    await failure(cluster, "block-false"),
    want(
      "false",
      "snapshot.storage.kubernetes.io/allow-volume-mode-change is set to false on snapshotcontent content-false",
    ),
  );
  assert.equal(
    await failure(cluster, "block-junk"),
    want(
      "junk",
      'failed to convert snapshot.storage.kubernetes.io/allow-volume-mode-change annotation value to boolean with error: strconv.ParseBool: parsing "maybe": invalid syntax',
    ),
  );
  await waitForVolume(cluster, claims.get("allowed")!);
  assert.ok(stub.creates.some((c) => c.volumeContentSource?.snapshot?.snapshotId === "h-allowed"));
  assert.ok(!stub.creates.some((c) => c.volumeContentSource?.snapshot?.snapshotId === "h-absent"));
  assert.deepEqual(forbidden(rbac.audit, PROVISIONER_USER).map(describeEvent), []);
});

test("--prevent-volume-mode-conversion=false restores across modes without the annotation", async (t) => {
  const { rbac, cluster, stub } = await underRole(t);
  await writeReadySnapshot(rbac.admin, { name: "fs", driver: STUB, handle: "h-fs", sizeBytes: MiB });
  runProvisioner(t, cluster, stub.server.path, ["--prevent-volume-mode-conversion=false"]);
  const claim = await createClaim(cluster, "as-block", STUB, { volumeMode: "Block", ...fromSnapshot("fs") });
  await waitForVolume(cluster, claim);
  assert.equal(stub.creates.at(-1)?.volumeContentSource?.snapshot?.snapshotId, "h-fs");
});

test("a snapshot being deleted: refused for a new restore, continued while it holds the provisioner's finalizer", async (t) => {
  const { rbac, cluster, stub } = await underRole(t);
  // A foreign finalizer keeps both in Terminating after the delete.
  const hold = "example.com/hold";
  await writeReadySnapshot(rbac.admin, {
    name: "going",
    driver: STUB,
    handle: "h-going",
    sizeBytes: MiB,
    finalizers: [hold],
  });
  await writeReadySnapshot(rbac.admin, {
    name: "started",
    driver: STUB,
    handle: "h-started",
    sizeBytes: MiB,
    finalizers: [hold, SNAPSHOT_SOURCE],
  });
  for (const name of ["going", "started"])
    await rbac.admin.delete(GVR.volumeSnapshots, name, { namespace: "default" });
  runProvisioner(t, cluster, stub.server.path, ["--snapshot-orphan-sweep-interval=0"]);
  await createClaim(cluster, "new", STUB, fromSnapshot("going"));
  assert.equal(
    await failure(cluster, "new"),
    'failed to provision volume with StorageClass "sc": snapshot going is being deleted',
  );
  const continued = await createClaim(cluster, "continued", STUB, fromSnapshot("started"));
  await waitForVolume(cluster, continued);
  assert.equal(stub.creates.at(-1)?.volumeContentSource?.snapshot?.snapshotId, "h-started");
  assert.ok(!stub.creates.some((c) => c.volumeContentSource?.snapshot?.snapshotId === "h-going"));
});

test("cross-namespace restore: refused without a ReferenceGrant, provisioned with one", async (t) => {
  const { rbac, cluster, stub } = await underRole(t, REFERENCE_GRANT_READER);
  await rbac.admin.create(GVR.customResourceDefinitions, REFERENCE_GRANT_CRD);
  const grants = { group: "gateway.networking.k8s.io", version: "v1beta1", resource: "referencegrants" };
  await until(
    async () => (await rbac.admin.list(grants, { namespace: "default" }), true),
    "ReferenceGrant served",
  );
  await rbac.admin.create(
    { group: "", version: "v1", resource: "namespaces" },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "backups" } },
  );
  await writeReadySnapshot(rbac.admin, {
    name: "nightly",
    namespace: "backups",
    driver: STUB,
    handle: "h-nightly",
    sizeBytes: MiB,
  });
  runProvisioner(t, cluster, stub.server.path, ["--feature-gates=CrossNamespaceVolumeDataSource=true"]);

  await createClaim(cluster, "ungranted", STUB, fromSnapshot("nightly", "backups"));
  assert.equal(
    await failure(cluster, "ungranted"),
    'failed to provision volume with StorageClass "sc": accessing backups/nightly of VolumeSnapshot dataSource from default/ungranted isn\'t allowed',
  );
  // A grant for claims of another namespace does not count.
  const grant = (name: string, from: string) => ({
    apiVersion: "gateway.networking.k8s.io/v1beta1",
    kind: "ReferenceGrant",
    metadata: { name, namespace: "backups" },
    spec: {
      from: [{ group: "", kind: "PersistentVolumeClaim", namespace: from }],
      to: [{ group: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "nightly" }],
    },
  });
  await rbac.admin.create(grants, grant("for-others", "elsewhere"));
  await createClaim(cluster, "still-ungranted", STUB, fromSnapshot("nightly", "backups"));
  assert.match(await failure(cluster, "still-ungranted"), /isn't allowed/);

  await rbac.admin.create(grants, grant("for-default", "default"));
  const granted = await createClaim(cluster, "granted", STUB, fromSnapshot("nightly", "backups"));
  await waitForVolume(cluster, granted);
  assert.equal(stub.creates.at(-1)?.volumeContentSource?.snapshot?.snapshotId, "h-nightly");
  assert.deepEqual(forbidden(rbac.audit, PROVISIONER_USER).map(describeEvent), []);
});
