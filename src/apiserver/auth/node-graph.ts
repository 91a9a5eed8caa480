// What a node may reach, as kube-apiserver's node authorizer graph (plugin/pkg/auth/authorizer/
// node) holds it: edges lead from an object to the node that needs it, and a node may read an
// object only if such a path exists. The edges csikit serves:
//   pod → node                        (pod.spec.nodeName)
//   secret, configmap → pod           (volumes, projected sources, env, envFrom, imagePullSecrets)
//   serviceaccount → pod              (spec.serviceAccountName)
//   pvc → pod                         (persistentVolumeClaim volumes; ephemeral: <pod>-<volume>)
//   pv → pvc                          (pv.spec.claimRef)
//   secret → pv                       (the PV's secret references, the CSI ones included)
//   volumeattachment → node           (spec.nodeName)
// Instead of upstream's incrementally kept graph, the set reachable from one node is computed
// from the store's pods, PVs and VolumeAttachments and kept until the store's revision moves.

import type { KubeObject } from "../rest/resource.ts";
import type { Store } from "../storage/index.ts";

type Obj = Record<string, unknown>;

export type VertexType =
  "pod" | "secret" | "configmap" | "serviceaccount" | "pvc" | "pv" | "volumeattachment";

function record(value: unknown): Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Obj) : {};
}

function list(value: unknown): Obj[] {
  return Array.isArray(value) ? value.map(record) : [];
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Names a pod refers to, by vertex type (upstream's VisitPodSecretNames / VisitPodConfigmapNames). */
export interface PodReferences {
  secrets: Set<string>;
  configmaps: Set<string>;
  pvcs: Set<string>;
  serviceAccount: string;
}

/** Every container of every kind: their env and envFrom name secrets and configmaps. */
function containersOf(spec: Obj): Obj[] {
  return [...list(spec.initContainers), ...list(spec.containers), ...list(spec.ephemeralContainers)];
}

/** The secretRef.name / secretName fields the in-tree volume sources use for their credentials. */
const VOLUME_SECRET_REFS: readonly (readonly [string, string])[] = [
  ["azureFile", "secretName"],
  ["cephfs", "secretRef"],
  ["cinder", "secretRef"],
  ["flexVolume", "secretRef"],
  ["rbd", "secretRef"],
  ["scaleIO", "secretRef"],
  ["iscsi", "secretRef"],
  ["storageos", "secretRef"],
  ["csi", "nodePublishSecretRef"],
];

function refName(value: unknown): string {
  return typeof value === "string" ? value : text(record(value).name);
}

export function podReferences(pod: KubeObject): PodReferences {
  const spec = record(pod.spec);
  const refs: PodReferences = {
    secrets: new Set(),
    configmaps: new Set(),
    pvcs: new Set(),
    serviceAccount: text(spec.serviceAccountName),
  };
  const add = (set: Set<string>, name: string): void => {
    if (name !== "") set.add(name);
  };
  for (const ref of list(spec.imagePullSecrets)) add(refs.secrets, text(ref.name));
  for (const container of containersOf(spec)) {
    for (const from of list(container.envFrom)) {
      add(refs.secrets, text(record(from.secretRef).name));
      add(refs.configmaps, text(record(from.configMapRef).name));
    }
    for (const env of list(container.env)) {
      const source = record(env.valueFrom);
      add(refs.secrets, text(record(source.secretKeyRef).name));
      add(refs.configmaps, text(record(source.configMapKeyRef).name));
    }
  }
  const podName = text(record(pod.metadata).name);
  for (const volume of list(spec.volumes)) {
    add(refs.secrets, text(record(volume.secret).secretName));
    add(refs.configmaps, text(record(volume.configMap).name));
    for (const [source, field] of VOLUME_SECRET_REFS) {
      if (volume[source] !== undefined) add(refs.secrets, refName(record(volume[source])[field]));
    }
    for (const projection of list(record(volume.projected).sources)) {
      add(refs.secrets, text(record(projection.secret).name));
      add(refs.configmaps, text(record(projection.configMap).name));
    }
    add(refs.pvcs, text(record(volume.persistentVolumeClaim).claimName));
    // A generic ephemeral volume's claim is named <pod>-<volume> (upstream's ephemeral.VolumeClaimName).
    if (volume.ephemeral !== undefined) add(refs.pvcs, `${podName}-${text(volume.name)}`);
  }
  return refs;
}

/** The PV's secret references as namespace/name (upstream's VisitPVSecretNames). */
export function pvSecrets(pv: KubeObject, claimNamespace: string): string[] {
  const spec = record(pv.spec);
  const secrets: string[] = [];
  const add = (namespace: string, name: string): void => {
    if (name !== "") secrets.push(`${namespace}/${name}`);
  };
  const csi = record(spec.csi);
  for (const field of [
    "controllerPublishSecretRef",
    "controllerExpandSecretRef",
    "nodePublishSecretRef",
    "nodeStageSecretRef",
    "nodeExpandSecretRef",
  ]) {
    const ref = record(csi[field]);
    add(text(ref.namespace), text(ref.name));
  }
  // In-tree sources: a SecretReference carries its namespace; a LocalObjectReference means the
  // claim's namespace; azureFile names its namespace beside the name (default: the claim's).
  const azure = record(spec.azureFile);
  add(text(azure.secretNamespace) || claimNamespace, text(azure.secretName));
  for (const [source, field] of VOLUME_SECRET_REFS) {
    if (source === "csi" || source === "azureFile" || spec[source] === undefined) continue;
    const ref = record(record(spec[source])[field]);
    add(text(ref.namespace) || claimNamespace, text(ref.name));
  }
  return secrets;
}

/** Vertex key: "<type> <namespace>/<name>" (cluster-scoped: empty namespace). */
export function vertexKey(type: VertexType, namespace: string, name: string): string {
  return `${type} ${namespace}/${name}`;
}

/** The objects from which a path leads to `node`, as vertex keys. */
export function reachableFrom(store: Store, node: string): Set<string> {
  const reachable = new Set<string>();
  const claims = new Set<string>();
  for (const item of store.list({ prefix: "/core/pods/" }).items) {
    const pod = item.object;
    if (text(record(pod.spec).nodeName) !== node) continue;
    const namespace = text(record(pod.metadata).namespace);
    reachable.add(vertexKey("pod", namespace, text(record(pod.metadata).name)));
    const refs = podReferences(pod);
    for (const name of refs.secrets) reachable.add(vertexKey("secret", namespace, name));
    for (const name of refs.configmaps) reachable.add(vertexKey("configmap", namespace, name));
    if (refs.serviceAccount !== "")
      reachable.add(vertexKey("serviceaccount", namespace, refs.serviceAccount));
    for (const name of refs.pvcs) {
      reachable.add(vertexKey("pvc", namespace, name));
      claims.add(`${namespace}/${name}`);
    }
  }
  if (claims.size > 0) {
    for (const item of store.list({ prefix: "/core/persistentvolumes/" }).items) {
      const pv = item.object;
      const claimRef = record(record(pv.spec).claimRef);
      const claimNamespace = text(claimRef.namespace);
      if (!claims.has(`${claimNamespace}/${text(claimRef.name)}`)) continue;
      reachable.add(vertexKey("pv", "", text(record(pv.metadata).name)));
      for (const secret of pvSecrets(pv, claimNamespace)) reachable.add(`secret ${secret}`);
    }
  }
  for (const item of store.list({ prefix: "/storage.k8s.io/volumeattachments/" }).items) {
    const attachment = item.object;
    if (text(record(attachment.spec).nodeName) === node)
      reachable.add(vertexKey("volumeattachment", "", text(record(attachment.metadata).name)));
  }
  return reachable;
}

/** reachableFrom, computed once per store revision and node. */
export class NodeGraph {
  readonly #store: Store;
  #revision = -1;
  readonly #byNode = new Map<string, Set<string>>();

  constructor(store: Store) {
    this.#store = store;
  }

  hasPath(node: string, type: VertexType, namespace: string, name: string): boolean {
    const revision = this.#store.currentRevision();
    if (revision !== this.#revision) {
      this.#byNode.clear();
      this.#revision = revision;
    }
    let reachable = this.#byNode.get(node);
    if (!reachable) {
      reachable = reachableFrom(this.#store, node);
      this.#byNode.set(node, reachable);
    }
    return reachable.has(vertexKey(type, namespace, name));
  }
}
