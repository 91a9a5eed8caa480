// Secret access on `csikit up`, no wider than the StorageClasses name it. deploy/rbac/ grants
// the sidecars no Secret at all (upstream ships that rule commented out); `up` watches the
// StorageClasses of its driver and keeps, per sidecar, `get` on exactly the secrets they name:
//   - name and namespace fixed:        a Role in that namespace with resourceNames [name];
//   - name templated (${pvc.name}…):   a Role in that namespace on every secret of it;
//   - namespace templated:             a ClusterRole with resourceNames [name] (any namespace);
//   - both templated:                  a ClusterRole on every secret (what the class asks for).
// Which sidecar reads which secret: the provisioner the provisioner secret (CreateVolume, and
// DeleteVolume through the PV's deletion-secret annotations), the attacher the
// controller-publish secret, the resizer the controller-expand and controller-modify secrets;
// each class's own pair, else its default `secret-name`/`secret-namespace` pair. The node
// secrets (node-stage, node-publish, node-expand) are the node identities' (csikit-nodes.yaml).
// Every object made here carries the label csikit.io/secret-access; the ones no class needs
// any more are deleted, so removing a class revokes its grants.

import { GVR, type StorageClass } from "../api/index.ts";
import { errorMessage, type Logger } from "../base/index.ts";
import {
  InformerFactory,
  WorkQueue,
  isNotFound,
  runController,
  type KubeClient,
  type KubeObject,
} from "../kube/index.ts";
import { secretTemplates, type SecretKind } from "../sidecars/provisioner/index.ts";
import { applyManifests, type Manifest } from "./manifests.ts";

export const SECRET_ACCESS_LABEL = "csikit.io/secret-access";

interface SecretReader {
  /** Component name, used in object names and the label's value. */
  component: string;
  serviceAccount: { namespace: string; name: string };
  kinds: readonly SecretKind[];
}

/** The controller-side readers of class secrets, with the ServiceAccounts of deploy/rbac/. */
export const SECRET_READERS: readonly SecretReader[] = [
  {
    component: "provisioner",
    serviceAccount: { namespace: "default", name: "csi-provisioner" },
    kinds: ["provisioner"],
  },
  {
    component: "attacher",
    serviceAccount: { namespace: "default", name: "csi-attacher" },
    kinds: ["controllerPublish"],
  },
  {
    component: "resizer",
    serviceAccount: { namespace: "default", name: "csi-resizer" },
    kinds: ["controllerExpand", "controllerModify"],
  },
];

const templated = (value: string): boolean => value.includes("$");

/** What one reader may get: per namespace (or "*" for any), secret names, or "*" for all. */
type Scope = Map<string, Set<string>>;

function addScope(scope: Scope, namespace: string, name: string): void {
  const names = scope.get(namespace) ?? new Set<string>();
  names.add(name);
  scope.set(namespace, names);
}

function scopeOf(reader: SecretReader, classes: readonly StorageClass[], logger?: Logger): Scope {
  const scope: Scope = new Map();
  for (const storageClass of classes)
    for (const kind of reader.kinds) {
      let ref: { name: string; namespace: string } | undefined;
      try {
        ref = secretTemplates(kind, storageClass.parameters ?? {});
      } catch (error) {
        // The provisioner refuses such a class with its own event; nothing to grant for it.
        logger?.info(2, "no secret access for a class with invalid secret parameters", {
          class: storageClass.metadata?.name,
          err: errorMessage(error),
        });
        continue;
      }
      if (!ref) continue;
      addScope(scope, templated(ref.namespace) ? "*" : ref.namespace, templated(ref.name) ? "*" : ref.name);
    }
  return scope;
}

const labels = (component: string): Record<string, string> => ({ [SECRET_ACCESS_LABEL]: component });

function rule(names: ReadonlySet<string>): Record<string, unknown> {
  return {
    apiGroups: [""],
    resources: ["secrets"],
    verbs: ["get"],
    ...(names.has("*") ? {} : { resourceNames: [...names].sort() }),
  };
}

/** The Roles/ClusterRoles and their bindings `classes` (of driver `driverName`) call for. */
export function secretAccessManifests(classes: readonly StorageClass[], driverName: string): Manifest[] {
  const ours = classes.filter((c) => c.provisioner === driverName);
  const manifests: Manifest[] = [];
  for (const reader of SECRET_READERS) {
    const name = `csikit:secrets:${reader.component}`;
    const subject = { kind: "ServiceAccount", ...reader.serviceAccount };
    for (const [namespace, names] of [...scopeOf(reader, ours)].sort(([a], [b]) => a.localeCompare(b))) {
      const cluster = namespace === "*";
      const metadata = {
        name,
        ...(cluster ? {} : { namespace }),
        labels: labels(reader.component),
      };
      manifests.push(
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: cluster ? "ClusterRole" : "Role",
          metadata,
          rules: [rule(names)],
        },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: cluster ? "ClusterRoleBinding" : "RoleBinding",
          metadata,
          subjects: [subject],
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: cluster ? "ClusterRole" : "Role", name },
        },
      );
    }
  }
  return manifests;
}

const GVR_OF_KIND = {
  Role: GVR.roles,
  RoleBinding: GVR.roleBindings,
  ClusterRole: GVR.clusterRoles,
  ClusterRoleBinding: GVR.clusterRoleBindings,
} as const;

/** Makes the cluster's secret grants exactly `desired`: creates or replaces, deletes the rest. */
export async function applySecretAccess(
  client: KubeClient,
  desired: readonly Manifest[],
  signal?: AbortSignal,
): Promise<void> {
  await applyManifests(client, desired, signal);
  const wanted = new Set(desired.map((m) => `${m.kind}/${m.metadata.namespace ?? ""}/${m.metadata.name}`));
  for (const [kind, gvr] of Object.entries(GVR_OF_KIND)) {
    const live = await client.list<KubeObject>(gvr, { labelSelector: SECRET_ACCESS_LABEL }, signal);
    for (const object of live.items) {
      const namespace = object.metadata?.namespace ?? "";
      if (wanted.has(`${kind}/${namespace}/${object.metadata?.name ?? ""}`)) continue;
      try {
        await client.delete(gvr, object.metadata?.name ?? "", namespace ? { namespace } : {}, signal);
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
  }
}

/**
 * Keeps the grants in step with the driver's StorageClasses until `signal` aborts (one key:
 * every change recomputes the whole set; failures retry with the queue's backoff).
 */
export async function runSecretAccess(
  options: { client: KubeClient; driverName: string; logger: Logger },
  signal: AbortSignal,
): Promise<void> {
  const factory = new InformerFactory({ client: options.client });
  const classes = factory.informer<StorageClass>(GVR.storageClasses);
  const queue = new WorkQueue<string>({ name: "secret-access" });
  const enqueue = (): void => queue.add("classes");
  classes.addEventHandler({ onAdd: enqueue, onUpdate: enqueue, onDelete: enqueue });
  // Once at start even without classes: grants a class deleted while `up` was down are revoked.
  enqueue();
  const informers = factory.start(signal).catch(() => {});
  await runController(
    {
      name: "secret-access",
      informers: [classes],
      queue,
      workers: 1,
      logger: options.logger,
      reconcile: async (_key, rc) => {
        const desired = secretAccessManifests(classes.store.list(), options.driverName);
        await applySecretAccess(options.client, desired, rc.signal);
        rc.logger.info(2, "secret access follows the StorageClasses", { objects: desired.length });
      },
    },
    signal,
  );
  await informers;
}
