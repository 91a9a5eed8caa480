// The read-only collector of `csikit why`: from a target (pod, claim, volume, attachment,
// snapshot) it follows the references a volume's chain is made of — pod → claim → class →
// VolumeAttributesClass → PV → node → CSINode → CSIDriver → VolumeAttachment, or snapshot →
// class → content → source claim — and reads each with GET or LIST only, plus the events about
// them, the leader Leases of the sidecars involved, and whether the secrets a class names exist
// (their data is never looked at beyond the answer). Works against any API server: it uses the
// same KubeClient as every component, from --kubeconfig.

import {
  GVR,
  type CSIDriver,
  type CSINode,
  type CoreEvent,
  type Lease,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type Secret,
  type StorageClass,
  type VolumeAttachment,
  type VolumeAttributesClass,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
} from "../api/index.ts";
import { ANNOTATIONS } from "../api/index.ts";
import { apiStatusCode, isNotFound, type KubeClient, type KubeObject } from "../kube/index.ts";
import type { ClusterView, Lookup, SecretCheck, Target } from "./model.ts";

type Gvr = (typeof GVR)[keyof typeof GVR];

/** GET by name; a 404 is an answer (the object is missing), anything else an error. */
async function lookup<T extends KubeObject>(
  client: KubeClient,
  gvr: Gvr,
  name: string,
  namespace?: string,
): Promise<Lookup<T>> {
  try {
    const object = await client.get<T>(gvr, name, namespace ? { namespace } : {});
    return { name, ...(namespace ? { namespace } : {}), object };
  } catch (error) {
    if (isNotFound(error)) return { name, ...(namespace ? { namespace } : {}) };
    throw error;
  }
}

/**
 * LIST that yields nothing when the caller may not list (403) or the kind is not served (404,
 * e.g. no snapshot CRDs): these feed hints (leases, other nodes), not the chain itself.
 */
async function listOrEmpty<T extends KubeObject>(
  client: KubeClient,
  gvr: Gvr,
  options: { namespace?: string; fieldSelector?: string } = {},
): Promise<T[]> {
  try {
    return (await client.list<T>(gvr, options)).items;
  } catch (error) {
    const code = apiStatusCode(error);
    if (code === 403 || code === 404) return [];
    throw error;
  }
}

/** Pods of `namespace` whose volumes name the claim (directly or as a generic ephemeral volume). */
function usesClaim(pod: Pod, claimName: string): boolean {
  return (pod.spec?.volumes ?? []).some(
    (volume) =>
      volume.persistentVolumeClaim?.claimName === claimName ||
      (volume.ephemeral !== undefined && `${pod.metadata.name}-${volume.name}` === claimName),
  );
}

/** The claims a pod's volumes name, in spec order. */
export function claimsOfPod(pod: Pod): string[] {
  const names: string[] = [];
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.persistentVolumeClaim?.claimName) names.push(volume.persistentVolumeClaim.claimName);
    else if (volume.ephemeral !== undefined) names.push(`${pod.metadata.name}-${volume.name}`);
  }
  return names;
}

/** The pod a claim's chain continues into: a scheduled, unfinished one first. */
function pickPod(pods: Pod[], nodeName?: string): Pod | undefined {
  const live = pods.filter((pod) => pod.status?.phase !== "Succeeded" && pod.status?.phase !== "Failed");
  const onNode = nodeName ? live.filter((pod) => pod.spec?.nodeName === nodeName) : live;
  return (
    onNode.find((pod) => pod.spec?.nodeName && pod.status?.phase !== "Running") ??
    onNode.find((pod) => !pod.spec?.nodeName) ??
    onNode[0] ??
    (nodeName ? undefined : pods[0])
  );
}

const SECRET_PREFIX = "csi.storage.k8s.io/";
/** Class parameters naming a secret, by CSI call ("" = the default for every call). */
const SECRET_CALLS = [
  "provisioner-",
  "controller-publish-",
  "node-stage-",
  "node-publish-",
  "controller-expand-",
  "node-expand-",
  "",
];

/** Resolves the templates a secret reference may use; undefined when one cannot be resolved here. */
function resolveTemplate(text: string, claim: PersistentVolumeClaim, pvName: string): string | undefined {
  const resolved = text.replace(/\$\{([^}]+)\}/g, (token, key: string) => {
    if (key === "pvc.name") return claim.metadata.name ?? token;
    if (key === "pvc.namespace") return claim.metadata.namespace ?? token;
    if (key === "pv.name") return pvName;
    const annotation = /^pvc\.annotations\['(.+)'\]$/.exec(key);
    if (annotation) return claim.metadata.annotations?.[annotation[1]!] ?? token;
    return token;
  });
  return resolved.includes("${") ? undefined : resolved;
}

/** The secrets a volume's CSI calls need: from the PV's refs once provisioned, else from the class. */
function secretRefs(
  storageClass: StorageClass | undefined,
  claim: PersistentVolumeClaim | undefined,
  volume: PersistentVolume | undefined,
): Omit<SecretCheck, "exists">[] {
  const refs: Omit<SecretCheck, "exists">[] = [];
  const csi = volume?.spec?.csi;
  if (csi) {
    const fromPv: [string, { name?: string; namespace?: string } | undefined][] = [
      ["controllerPublishSecretRef", csi.controllerPublishSecretRef],
      ["nodeStageSecretRef", csi.nodeStageSecretRef],
      ["nodePublishSecretRef", csi.nodePublishSecretRef],
      ["controllerExpandSecretRef", csi.controllerExpandSecretRef],
    ];
    const calls: Record<string, string> = {
      controllerPublishSecretRef: "controller-publish",
      nodeStageSecretRef: "node-stage",
      nodePublishSecretRef: "node-publish",
      controllerExpandSecretRef: "controller-expand",
    };
    for (const [field, ref] of fromPv)
      if (ref?.name && ref.namespace)
        refs.push({
          parameter: `PV spec.csi.${field} (${calls[field]})`,
          namespace: ref.namespace,
          name: ref.name,
        });
    return refs;
  }
  if (!storageClass || !claim) return refs;
  const parameters = storageClass.parameters ?? {};
  const pvName = `pvc-${claim.metadata.uid ?? ""}`;
  for (const call of SECRET_CALLS) {
    const nameKey = `${SECRET_PREFIX}${call}secret-name`;
    const namespaceKey = `${SECRET_PREFIX}${call}secret-namespace`;
    const name = parameters[nameKey];
    const namespace = parameters[namespaceKey];
    if (name === undefined || namespace === undefined) continue;
    const resolvedName = resolveTemplate(name, claim, pvName);
    const resolvedNamespace = resolveTemplate(namespace, claim, pvName);
    if (resolvedName && resolvedNamespace)
      // The default ("secret-name") serves every call: report it under the provisioner's name.
      refs.push({
        parameter: call === "" ? `${nameKey} (provisioner and all calls)` : nameKey,
        namespace: resolvedNamespace,
        name: resolvedName,
      });
  }
  return refs;
}

async function checkSecrets(client: KubeClient, refs: Omit<SecretCheck, "exists">[]): Promise<SecretCheck[]> {
  const checks: SecretCheck[] = [];
  for (const ref of refs) {
    try {
      await client.get<Secret>(GVR.secrets, ref.name, { namespace: ref.namespace });
      checks.push({ ...ref, exists: true });
    } catch (error) {
      if (isNotFound(error)) checks.push({ ...ref, exists: false });
      // 403: the caller may not read secrets; say nothing rather than guess.
      else if (apiStatusCode(error) !== 403) throw error;
    }
  }
  return checks;
}

/** Events about an object by name (all namespaces: cluster-scoped objects' events sit in "default"). */
async function eventsAbout(client: KubeClient, name: string | undefined): Promise<CoreEvent[]> {
  if (!name) return [];
  return listOrEmpty<CoreEvent>(client, GVR.events, { fieldSelector: `involvedObject.name=${name}` });
}

/** Reads everything the chain of `target` is made of. Throws only on API errors other than 404/403. */
export async function collect(client: KubeClient, target: Target, claimOfPod?: string): Promise<ClusterView> {
  const view: ClusterView = {
    now: new Date().toISOString(),
    target,
    podsUsingClaim: [],
    nodes: [],
    secrets: [],
    leases: [],
    events: [],
  };
  let claimRef: { name: string; namespace: string } | undefined;
  let volumeName: string | undefined;
  let nodeName: string | undefined;
  switch (target.kind) {
    case "pod": {
      view.pod = await lookup<Pod>(client, GVR.pods, target.name, target.namespace);
      const claimName = claimOfPod ?? (view.pod.object ? claimsOfPod(view.pod.object)[0] : undefined);
      if (claimName) claimRef = { name: claimName, namespace: target.namespace! };
      nodeName = view.pod.object?.spec?.nodeName;
      break;
    }
    case "pvc":
      claimRef = { name: target.name, namespace: target.namespace! };
      break;
    case "pv": {
      view.volume = await lookup<PersistentVolume>(client, GVR.persistentVolumes, target.name);
      const ref = view.volume.object?.spec?.claimRef;
      if (ref?.name && ref.namespace) claimRef = { name: ref.name, namespace: ref.namespace };
      break;
    }
    case "volumeattachment": {
      view.attachment = await lookup<VolumeAttachment>(client, GVR.volumeAttachments, target.name);
      const attachment = view.attachment.object;
      nodeName = attachment?.spec.nodeName;
      volumeName = attachment?.spec.source.persistentVolumeName;
      if (volumeName) {
        view.volume = await lookup<PersistentVolume>(client, GVR.persistentVolumes, volumeName);
        const ref = view.volume.object?.spec?.claimRef;
        if (ref?.name && ref.namespace) claimRef = { name: ref.name, namespace: ref.namespace };
      }
      break;
    }
    case "volumesnapshot":
      await collectSnapshot(client, view);
      return view;
  }

  if (claimRef) {
    view.claim = await lookup<PersistentVolumeClaim>(
      client,
      GVR.persistentVolumeClaims,
      claimRef.name,
      claimRef.namespace,
    );
    const claim = view.claim.object;
    const pods = await listOrEmpty<Pod>(client, GVR.pods, { namespace: claimRef.namespace });
    view.podsUsingClaim = pods.filter((pod) => usesClaim(pod, claimRef.name));
    if (!view.pod && target.kind !== "pod") {
      const pod = pickPod(view.podsUsingClaim, target.kind === "volumeattachment" ? nodeName : undefined);
      if (pod) view.pod = { name: pod.metadata.name!, namespace: claimRef.namespace, object: pod };
    }
    nodeName ??= view.pod?.object?.spec?.nodeName;
    if (claim) {
      const className = claim.spec?.storageClassName;
      if (className) view.storageClass = await lookup<StorageClass>(client, GVR.storageClasses, className);
      const vacName = claim.spec?.volumeAttributesClassName;
      if (vacName)
        view.volumeAttributesClass = await lookup<VolumeAttributesClass>(
          client,
          GVR.volumeAttributesClasses,
          vacName,
        );
      volumeName ??= claim.spec?.volumeName;
      if (!view.volume && volumeName)
        view.volume = await lookup<PersistentVolume>(client, GVR.persistentVolumes, volumeName);
      if (!view.volume && claim.metadata.uid) {
        // Provisioned but not bound yet: the volume points at the claim, the claim not yet at it.
        const volumes = await listOrEmpty<PersistentVolume>(client, GVR.persistentVolumes);
        const mine = volumes.find((pv) => pv.spec?.claimRef?.uid === claim.metadata.uid);
        if (mine) view.volume = { name: mine.metadata.name!, object: mine };
      }
    }
  } else if (target.kind === "volumeattachment" && view.volume?.object && !view.storageClass) {
    const className = view.volume.object.spec?.storageClassName;
    if (className) view.storageClass = await lookup<StorageClass>(client, GVR.storageClasses, className);
  }

  const volume = view.volume?.object;
  const driver =
    volume?.spec?.csi?.driver ??
    view.attachment?.object?.spec.attacher ??
    view.storageClass?.object?.provisioner;
  if (driver && !driver.startsWith("kubernetes.io/"))
    view.csiDriver = await lookup<CSIDriver>(client, GVR.csiDrivers, driver);
  if (nodeName) {
    view.node = await lookup<Node>(client, GVR.nodes, nodeName);
    view.csiNode = await lookup<CSINode>(client, GVR.csiNodes, nodeName);
    if (!view.attachment && volume?.metadata.name) {
      const attachments = await listOrEmpty<VolumeAttachment>(client, GVR.volumeAttachments);
      const mine = attachments.find(
        (va) => va.spec.source.persistentVolumeName === volume.metadata.name && va.spec.nodeName === nodeName,
      );
      if (mine) view.attachment = { name: mine.metadata.name!, object: mine };
    }
  }
  view.nodes = await listOrEmpty<Node>(client, GVR.nodes);
  view.secrets = await checkSecrets(
    client,
    secretRefs(view.storageClass?.object, view.claim?.object, volume),
  );
  view.leases = await listOrEmpty<Lease>(client, GVR.leases);
  const names = new Set(
    [
      view.pod?.object?.metadata.name,
      view.claim?.name,
      view.volume?.name,
      view.attachment?.name,
      nodeName,
    ].filter((name): name is string => name !== undefined),
  );
  for (const name of names) view.events.push(...(await eventsAbout(client, name)));
  return view;
}

async function collectSnapshot(client: KubeClient, view: ClusterView): Promise<void> {
  const { target } = view;
  view.snapshot = await lookup<VolumeSnapshot>(client, GVR.volumeSnapshots, target.name, target.namespace);
  const snapshot = view.snapshot.object;
  if (!snapshot) return;
  const claimName = snapshot.spec.source.persistentVolumeClaimName;
  if (claimName) {
    view.claim = await lookup<PersistentVolumeClaim>(
      client,
      GVR.persistentVolumeClaims,
      claimName,
      target.namespace,
    );
    const volumeName = view.claim.object?.spec?.volumeName;
    if (volumeName) view.volume = await lookup<PersistentVolume>(client, GVR.persistentVolumes, volumeName);
  }
  const className = snapshot.spec.volumeSnapshotClassName;
  if (className)
    view.snapshotClass = await lookup<VolumeSnapshotClass>(client, GVR.volumeSnapshotClasses, className);
  else {
    // No class named: the snapshot-controller picks the default class of the source's driver.
    const driver = view.volume?.object?.spec?.csi?.driver;
    const classes = await listOrEmpty<VolumeSnapshotClass>(client, GVR.volumeSnapshotClasses);
    const fallback = classes.find(
      (c) =>
        (driver === undefined || c.driver === driver) &&
        c.metadata.annotations?.[ANNOTATIONS.isDefaultSnapshotClass.key] === "true",
    );
    if (fallback) view.snapshotClass = { name: fallback.metadata.name!, object: fallback };
  }
  const contentName =
    snapshot.status?.boundVolumeSnapshotContentName ?? snapshot.spec.source.volumeSnapshotContentName;
  if (contentName)
    view.snapshotContent = await lookup<VolumeSnapshotContent>(
      client,
      GVR.volumeSnapshotContents,
      contentName,
    );
  view.leases = await listOrEmpty<Lease>(client, GVR.leases);
  for (const name of [target.name, contentName]) view.events.push(...(await eventsAbout(client, name)));
}
