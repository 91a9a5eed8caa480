// Secret access on `up` follows the StorageClasses: under deploy/rbac/ the sidecars read no
// Secret at all; a class naming a provisioner secret lets the provisioner (and only it) get
// exactly that secret; a templated namespace widens to that name in any namespace; a
// controller-publish secret is the attacher's; deleting the class revokes the grant.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type StorageClass } from "../api/index.ts";
import { apiStatusCode, KubeClient, loadKubeConfig } from "../kube/index.ts";
import { silentLogger } from "../base/index.ts";
import { runSecretAccess, secretAccessManifests } from "./secret-access.ts";
import { startRbacCluster } from "../../test/harness/rbac.ts";
import { defer } from "../../test/harness/cleanup.ts";
import { until } from "../../test/harness/until.ts";

const DRIVER = "hostpath.csi.k8s.io";

function storageClass(name: string, parameters: Record<string, string>, provisioner = DRIVER): StorageClass {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name },
    provisioner,
    parameters,
  };
}

test("grants: one Role per namespace with the names, a ClusterRole when the namespace is templated", () => {
  const manifests = secretAccessManifests(
    [
      storageClass("a", {
        "csi.storage.k8s.io/provisioner-secret-name": "prov",
        "csi.storage.k8s.io/provisioner-secret-namespace": "team",
        "csi.storage.k8s.io/controller-publish-secret-name": "pub",
        "csi.storage.k8s.io/controller-publish-secret-namespace": "${pvc.namespace}",
      }),
      storageClass("b", {
        "csi.storage.k8s.io/secret-name": "${pvc.name}",
        "csi.storage.k8s.io/secret-namespace": "team",
      }),
      storageClass(
        "other",
        { "csi.storage.k8s.io/secret-name": "x", "csi.storage.k8s.io/secret-namespace": "y" },
        "else",
      ),
    ],
    DRIVER,
  );
  const roles = manifests
    .filter((m) => m.kind === "Role" || m.kind === "ClusterRole")
    .map((m) => [m.kind, m.metadata.namespace ?? "", m.metadata.name, m.rules]);
  assert.deepEqual(roles, [
    // class b's templated name opens the namespace for every reader the default pair covers.
    [
      "Role",
      "team",
      "csikit:secrets:provisioner",
      [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }],
    ],
    [
      "ClusterRole",
      "",
      "csikit:secrets:attacher",
      [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["pub"] }],
    ],
    [
      "Role",
      "team",
      "csikit:secrets:attacher",
      [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }],
    ],
    ["Role", "team", "csikit:secrets:resizer", [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }]],
  ]);
  assert.deepEqual(secretAccessManifests([storageClass("plain", {})], DRIVER), []);
});

test("up's secret access: exactly the secrets the classes name, revoked with the class", async (t) => {
  const rbac = await startRbacCluster(t);
  const clientOf = async (name: string): Promise<KubeClient> => {
    const client = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: await rbac.serviceAccountKubeconfig("default", name) }),
    });
    defer(t, () => client.close());
    return client;
  };
  const provisioner = await clientOf("csi-provisioner");
  const attacher = await clientOf("csi-attacher");
  const status = (client: KubeClient, namespace: string, name: string): Promise<number> =>
    client.get(GVR.secrets, name, { namespace }).then(
      () => 200,
      (error: unknown) => apiStatusCode(error) ?? -1,
    );
  for (const namespace of ["team", "elsewhere"])
    await rbac.admin.create(GVR.namespaces, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: namespace },
    });
  for (const [namespace, name] of [
    ["team", "prov"],
    ["team", "unrelated"],
    ["elsewhere", "pub"],
    ["elsewhere", "prov"],
  ] as const)
    await rbac.admin.create(GVR.secrets, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace },
      stringData: { key: "value" },
    });
  // deploy/rbac alone: no sidecar reads any Secret.
  assert.equal(await status(provisioner, "team", "prov"), 403);
  assert.equal(await status(attacher, "elsewhere", "pub"), 403);

  const controller = new AbortController();
  const running = runSecretAccess(
    { client: rbac.admin, driverName: DRIVER, logger: silentLogger },
    controller.signal,
  );
  defer(t, async () => {
    controller.abort();
    await running;
  });
  await rbac.admin.create(
    GVR.storageClasses,
    storageClass("with-secrets", {
      "csi.storage.k8s.io/provisioner-secret-name": "prov",
      "csi.storage.k8s.io/provisioner-secret-namespace": "team",
      "csi.storage.k8s.io/controller-publish-secret-name": "pub",
      "csi.storage.k8s.io/controller-publish-secret-namespace": "${pvc.namespace}",
    }),
  );
  await until(
    async () => (await status(provisioner, "team", "prov")) === 200,
    "provisioner reads its secret",
  );
  await until(async () => (await status(attacher, "elsewhere", "pub")) === 200, "attacher reads its secret");
  // Nothing else: another secret of the namespace, the same name elsewhere, another reader.
  assert.equal(await status(provisioner, "team", "unrelated"), 403);
  assert.equal(await status(provisioner, "elsewhere", "prov"), 403);
  assert.equal(await status(attacher, "team", "prov"), 403);
  assert.equal(await status(provisioner, "elsewhere", "pub"), 403);

  await rbac.admin.delete(GVR.storageClasses, "with-secrets");
  await until(
    async () => (await status(provisioner, "team", "prov")) === 403,
    "grant revoked with its class",
  );
  await until(
    async () => (await status(attacher, "elsewhere", "pub")) === 403,
    "grant revoked with its class",
  );
});
