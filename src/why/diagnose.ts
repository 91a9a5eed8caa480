// The diagnosis of `csikit why`: a pure function from a ClusterView to the chain a volume goes
// through — deletion (finalizers) → claim → class → VolumeAttributesClass → provision → bind →
// resize → schedule → node → driver registration → attach → mount → pod, or for a snapshot
// class → source → content → ready — stopping at the first link that is not done and saying
// what it waits for, who moves it on (component, finalizer, annotation), the events and status
// errors that show it, and the command that would help. No I/O: the collector reads, this
// judges, so every rule can be tested with objects alone and the same rules serve any cluster.

import {
  ANNOTATIONS,
  FINALIZERS,
  EVENT_REASONS,
  attacherFinalizer,
  compareQuantities,
  tryParseQuantity,
  type CoreEvent,
  type Lease,
  type Node,
  type NodeSelectorRequirement,
  type NodeSelectorTerm,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../api/index.ts";
import { GRPC_CODE_NAMES, leaseName, type LeaseComponent } from "../kube/index.ts";
import type { ClusterView, Diagnosis, EventEvidence, Link, LinkState, Responsible, Step } from "./model.ts";

/** Events shown per link: the latest few are what a person reads. */
const EVENTS_PER_LINK = 5;

const STORAGE_PROVISIONER = ANNOTATIONS.storageProvisioner.key;
const BETA_STORAGE_PROVISIONER = ANNOTATIONS.betaStorageProvisioner.key;
const SELECTED_NODE = ANNOTATIONS.selectedNode.key;
const BIND_COMPLETED = ANNOTATIONS.bindCompleted.key;
const STORAGE_RESIZER = ANNOTATIONS.storageResizer.key;

interface LinkInput {
  step: Step;
  state: LinkState;
  object?: string | undefined;
  summary: string;
  cause?: string | undefined;
  responsible?: Responsible | undefined;
  details?: string[];
  events?: EventEvidence[];
  next?: string[];
}

function link(input: LinkInput): Link {
  return {
    step: input.step,
    state: input.state,
    ...(input.object !== undefined ? { object: input.object } : {}),
    summary: input.summary,
    ...(input.cause !== undefined ? { cause: input.cause } : {}),
    ...(input.responsible !== undefined ? { responsible: input.responsible } : {}),
    details: input.details ?? [],
    events: input.events ?? [],
    next: input.next ?? [],
  };
}

// ---- event helpers -----------------------------------------------------------------------

function eventTime(event: CoreEvent): string {
  return (
    event.lastTimestamp ??
    event.series?.lastObservedTime ??
    event.eventTime ??
    event.firstTimestamp ??
    event.metadata.creationTimestamp ??
    ""
  );
}

/** Events about one object (kind and name; uid too when the event carries one), newest first. */
function eventsOf(
  view: ClusterView,
  kind: string,
  name: string | undefined,
  namespace?: string,
  uid?: string,
): CoreEvent[] {
  if (name === undefined) return [];
  return view.events
    .filter((event) => {
      const ref = event.involvedObject;
      if (ref.kind !== kind || ref.name !== name) return false;
      if (namespace !== undefined && ref.namespace !== undefined && ref.namespace !== namespace) return false;
      return uid === undefined || ref.uid === undefined || ref.uid === "" || ref.uid === uid;
    })
    .sort((a, b) => eventTime(b).localeCompare(eventTime(a)));
}

function evidence(events: readonly CoreEvent[], limit = EVENTS_PER_LINK): EventEvidence[] {
  return events.slice(0, limit).map((event) => {
    const ref = event.involvedObject;
    const last = eventTime(event);
    const source = event.source?.component ?? event.reportingComponent;
    return {
      object: objectName(ref.kind ?? "", ref.name ?? "", ref.namespace),
      type: event.type ?? "Normal",
      reason: event.reason ?? "",
      message: event.message ?? "",
      count: event.count ?? event.series?.count ?? 1,
      ...(last !== "" ? { last } : {}),
      ...(source ? { source } : {}),
    };
  });
}

/** The newest event with one of `reasons`, unless a newer one with one of `clearedBy` follows it. */
function standing(
  events: readonly CoreEvent[],
  reasons: readonly string[],
  clearedBy: readonly string[] = [],
): CoreEvent | undefined {
  for (const event of events) {
    if (clearedBy.includes(event.reason ?? "")) return undefined;
    if (reasons.includes(event.reason ?? "")) return event;
  }
  return undefined;
}

function objectName(kind: string, name: string, namespace?: string): string {
  return namespace ? `${kind}/${namespace}/${name}` : `${kind}/${name}`;
}

function eventsCommand(name: string, namespace?: string): string {
  return `kubectl get events ${namespace ? `-n ${namespace}` : "-A"} --field-selector involvedObject.name=${name}`;
}

// ---- leases --------------------------------------------------------------------------------

/** The leader Lease of `component` for `driver`, with whether its holder stopped renewing it. */
function leaseOf(
  view: ClusterView,
  component: LeaseComponent,
  driver: string,
): { lease: Lease; expired: boolean; text: string } | undefined {
  const name = leaseName(component, driver);
  const lease = view.leases.find((candidate) => candidate.metadata.name === name);
  if (!lease) return undefined;
  const spec = lease.spec ?? {};
  const renewed = spec.renewTime ?? spec.acquireTime;
  const duration = spec.leaseDurationSeconds ?? 15;
  const where = `Lease ${lease.metadata.namespace}/${name}`;
  if (!spec.holderIdentity) return { lease, expired: true, text: `${where} has no holder: no replica leads` };
  if (renewed === undefined)
    return { lease, expired: false, text: `${where} held by ${spec.holderIdentity}` };
  const expiresMs = Date.parse(renewed) + duration * 1000;
  const nowMs = Date.parse(view.now);
  if (expiresMs < nowMs)
    return {
      lease,
      expired: true,
      text: `${where} held by ${spec.holderIdentity} expired ${ago(nowMs - expiresMs)} ago (last renewed ${renewed}, duration ${duration}s): the ${component} is not running`,
    };
  return { lease, expired: false, text: `${where} held by ${spec.holderIdentity}, renewed ${renewed}` };
}

function ago(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
}

// ---- node affinity (the scheduler's matching rules, for counting nodes a volume fits) ---------

function requirementMatches(requirement: NodeSelectorRequirement, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  const value = requirement.key === "metadata.name" ? node.metadata.name : labels[requirement.key];
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
      return value !== undefined && Number(value) > Number(values[0]);
    case "Lt":
      return value !== undefined && Number(value) < Number(values[0]);
    default:
      return false;
  }
}

function termMatches(term: NodeSelectorTerm, node: Node): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = (term.matchFields ?? []).map((field) => ({ ...field, key: "metadata.name" }));
  if (expressions.length === 0 && fields.length === 0) return false;
  return [...expressions, ...fields].every((requirement) => requirementMatches(requirement, node));
}

function formatTerms(terms: readonly NodeSelectorTerm[]): string {
  return terms
    .map((term) =>
      [...(term.matchExpressions ?? []), ...(term.matchFields ?? [])]
        .map((r) => `${r.key} ${r.operator}${r.values?.length ? ` [${r.values.join(",")}]` : ""}`)
        .join(" && "),
    )
    .join(" || ");
}

// ---- the chain -----------------------------------------------------------------------------

class Chain {
  readonly links: Link[] = [];
  /** Adds a link; returns false when it is not done (the chain stops there). */
  add(next: Link): boolean {
    this.links.push(next);
    return next.state === "done";
  }
}

/** The diagnosis of one target from what the collector read. */
export function diagnose(view: ClusterView): Diagnosis {
  const chain = new Chain();
  const { target } = view;
  let phase = "";
  if (target.kind === "volumesnapshot") {
    phase = snapshotPhase(view);
    snapshotChain(view, chain);
  } else {
    phase = targetPhase(view);
    volumeChain(view, chain);
  }
  return {
    target,
    phase,
    done: chain.links.every((l) => l.state === "done"),
    links: chain.links,
  };
}

function targetPhase(view: ClusterView): string {
  const { target } = view;
  const deleting = (meta?: { deletionTimestamp?: string | null }): string =>
    meta?.deletionTimestamp ? " (Terminating)" : "";
  switch (target.kind) {
    case "pod": {
      const pod = view.pod?.object;
      return pod ? `${pod.status?.phase ?? "Pending"}${deleting(pod.metadata)}` : "NotFound";
    }
    case "pvc": {
      const claim = view.claim?.object;
      return claim ? `${claim.status?.phase ?? "Pending"}${deleting(claim.metadata)}` : "NotFound";
    }
    case "pv": {
      const volume = view.volume?.object;
      return volume ? `${volume.status?.phase ?? "Pending"}${deleting(volume.metadata)}` : "NotFound";
    }
    case "volumeattachment": {
      const attachment = view.attachment?.object;
      if (!attachment) return "NotFound";
      return `${attachment.status?.attached ? "attached" : "not attached"}${deleting(attachment.metadata)}`;
    }
    default:
      return "";
  }
}

function volumeChain(view: ClusterView, chain: Chain): void {
  // An object being deleted waits on its finalizers before anything else matters.
  for (const deletion of deletionLinks(view)) if (!chain.add(deletion)) return;
  const { target } = view;
  const pod = view.pod?.object;
  if (target.kind === "pod" && !pod) {
    chain.add(
      link({
        step: "pod",
        state: "failed",
        object: objectName("Pod", target.name, target.namespace),
        summary: "the pod does not exist",
        cause: `pods "${target.name}" not found in namespace ${target.namespace}`,
        next: [`kubectl get pods -n ${target.namespace}`],
      }),
    );
    return;
  }
  if (target.kind === "pv" && !view.volume?.object) {
    chain.add(missing("bind", "PersistentVolume", target.name, undefined, "kubectl get pv"));
    return;
  }
  if (target.kind === "volumeattachment" && !view.attachment?.object) {
    chain.add(missing("attach", "VolumeAttachment", target.name, undefined, "kubectl get volumeattachments"));
    return;
  }
  if (target.kind === "pv" && !view.claim) {
    const volume = view.volume!.object!;
    chain.add(
      link({
        step: "bind",
        state: volume.status?.phase === "Available" ? "done" : "waiting",
        object: objectName("PersistentVolume", target.name),
        summary:
          volume.status?.phase === "Available"
            ? "the volume is Available: no claim is bound to it"
            : `the volume is ${volume.status?.phase ?? "Pending"} and names no claim`,
        events: evidence(eventsOf(view, "PersistentVolume", target.name)),
        next: [`kubectl describe pv ${target.name}`],
      }),
    );
    return;
  }
  if (view.claim) {
    if (!claimLinks(view, chain)) return;
  } else if (pod && target.kind === "pod") {
    // A pod without claims: only its own scheduling and start are links.
  }
  if (!pod) {
    if (target.kind === "volumeattachment") attachmentOnly(view, chain);
    return;
  }
  podLinks(view, chain, pod);
}

function missing(step: Step, kind: string, name: string, namespace: string | undefined, next: string): Link {
  return link({
    step,
    state: "failed",
    object: objectName(kind, name, namespace),
    summary: `${kind} ${namespace ? `${namespace}/` : ""}${name} does not exist`,
    cause: `${kind} "${name}" not found${namespace ? ` in namespace ${namespace}` : ""}`,
    next: [next],
  });
}

// ---- deletion ------------------------------------------------------------------------------

interface Deletable {
  kind: string;
  name: string;
  namespace?: string | undefined;
  finalizers: string[];
  deletionTimestamp: string;
}

function deletables(view: ClusterView): Deletable[] {
  const out: Deletable[] = [];
  const add = (
    kind: string,
    object:
      | {
          metadata: {
            name?: string;
            namespace?: string;
            finalizers?: string[];
            deletionTimestamp?: string | null;
          };
        }
      | undefined,
  ) => {
    if (!object?.metadata.deletionTimestamp) return;
    out.push({
      kind,
      name: object.metadata.name ?? "",
      namespace: object.metadata.namespace,
      finalizers: object.metadata.finalizers ?? [],
      deletionTimestamp: object.metadata.deletionTimestamp,
    });
  };
  // The target first: its own deletion is what the user asked about.
  const byKind = {
    pod: () => add("Pod", view.pod?.object),
    pvc: () => add("PersistentVolumeClaim", view.claim?.object),
    pv: () => add("PersistentVolume", view.volume?.object),
    volumeattachment: () => add("VolumeAttachment", view.attachment?.object),
    volumesnapshot: () => {
      add("VolumeSnapshot", view.snapshot?.object);
      add("VolumeSnapshotContent", view.snapshotContent?.object);
    },
  } as const;
  byKind[view.target.kind]();
  return out;
}

function deletionLinks(view: ClusterView): Link[] {
  return deletables(view).map((object) => {
    const label = objectName(object.kind, object.name, object.namespace);
    const since = ago(Date.parse(view.now) - Date.parse(object.deletionTimestamp));
    if (object.finalizers.length === 0)
      return link({
        step: "deletion",
        state: "waiting",
        object: label,
        summary: `deleted ${since} ago; no finalizer left, the API server removes it`,
      });
    const first = object.finalizers[0]!;
    const owner = finalizerOwner(view, first, object);
    return link({
      step: "deletion",
      state: "waiting",
      object: label,
      summary: `deletion requested ${since} ago waits for finalizer ${first}${object.finalizers.length > 1 ? ` (and ${object.finalizers.slice(1).join(", ")})` : ""}`,
      cause: owner.cause,
      responsible: { component: owner.component, finalizer: first },
      details: owner.details,
      events: evidence(eventsOf(view, object.kind, object.name, object.namespace)),
      next: [
        ...owner.next,
        `kubectl describe ${object.kind.toLowerCase()} ${object.namespace ? `-n ${object.namespace} ` : ""}${object.name}`,
      ],
    });
  });
}

interface FinalizerOwner {
  component: string;
  cause: string;
  details: string[];
  next: string[];
}

function finalizerOwner(view: ClusterView, finalizer: string, object: Deletable): FinalizerOwner {
  const driver =
    view.volume?.object?.spec?.csi?.driver ??
    view.attachment?.object?.spec.attacher ??
    view.storageClass?.object?.provisioner;
  const forceRemove = `kubectl patch ${object.kind.toLowerCase()} ${object.namespace ? `-n ${object.namespace} ` : ""}${object.name} --type=merge -p '{"metadata":{"finalizers":null}}'   # last resort: skips the cleanup the finalizer guards`;
  const withLease = (component: LeaseComponent, name: string, cause: string): FinalizerOwner => {
    const lease = driver ? leaseOf(view, component, driver) : undefined;
    return {
      component: name,
      cause: lease?.expired ? `${cause}; ${lease.text}` : cause,
      details: lease && !lease.expired ? [lease.text] : [],
      next: [`check that the ${name} is running and its logs`, forceRemove],
    };
  };
  if (finalizer === FINALIZERS.pvcProtection.key) {
    // As the pvc-protection controller counts them: scheduled pods that have not finished.
    const users = view.podsUsingClaim
      .filter((pod) => pod.spec?.nodeName && !podFinished(pod))
      .map((pod) => pod.metadata.name!);
    return {
      component: "pvc-protection controller (kube-controller-manager)",
      cause:
        users.length > 0
          ? `the claim is still used by pod(s) ${users.join(", ")}; it is removed once no running pod uses it`
          : "no pod uses the claim any more, yet the pvc-protection controller has not removed its finalizer: is the controller manager running?",
      details: [],
      next:
        users.length > 0
          ? users.map((name) => `kubectl delete pod -n ${object.namespace} ${name}`)
          : [forceRemove],
    };
  }
  if (finalizer === FINALIZERS.pvProtection.key) {
    const claim = view.volume?.object?.spec?.claimRef;
    return {
      component: "pv-protection controller (kube-controller-manager)",
      cause:
        view.volume?.object?.status?.phase === "Bound" && claim
          ? `the volume is still Bound to claim ${claim.namespace}/${claim.name}; it is removed once the volume is released`
          : "the volume is not bound, yet the pv-protection controller has not removed its finalizer: is the controller manager running?",
      details: [],
      next: claim ? [`kubectl delete pvc -n ${claim.namespace} ${claim.name}`] : [forceRemove],
    };
  }
  if (finalizer === FINALIZERS.provisionerDeletion.key)
    return withLease(
      "provisioner",
      `external-provisioner${driver ? ` for ${driver}` : ""}`,
      "DeleteVolume has not completed: the external-provisioner removes this finalizer after the driver deleted the volume",
    );
  if (finalizer.startsWith("external-attacher/"))
    return withLease(
      "attacher",
      `external-attacher${driver ? ` for ${driver}` : ""}`,
      "ControllerUnpublish has not completed: the external-attacher removes this finalizer once the volume is detached",
    );
  if (finalizer.startsWith("snapshot.storage.kubernetes.io/"))
    return withLease(
      "snapshot-controller",
      "snapshot-controller",
      "the snapshot-controller removes this finalizer once the snapshot and its content are unbound and the backend snapshot is handled",
    );
  if (
    finalizer === FINALIZERS.snapshotAsSourceProtectionProvisioner.key ||
    finalizer === FINALIZERS.cloningProtection.key
  )
    return withLease(
      "provisioner",
      `external-provisioner${driver ? ` for ${driver}` : ""}`,
      "a volume is being provisioned from this source; the external-provisioner removes the finalizer when that is done",
    );
  return {
    component: `whoever added finalizer ${finalizer}`,
    cause: `finalizer ${finalizer} is not one csikit knows; the controller that added it must remove it`,
    details: [],
    next: [forceRemove],
  };
}

function podFinished(pod: Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

// ---- claim, class, provision, bind, resize ---------------------------------------------------

function claimClassName(claim: PersistentVolumeClaim): string | undefined {
  return (
    claim.spec?.storageClassName ?? claim.metadata.annotations?.["volume.beta.kubernetes.io/storage-class"]
  );
}

/** Adds the claim's links; returns true when all are done. */
function claimLinks(view: ClusterView, chain: Chain): boolean {
  const lookup = view.claim!;
  const claim = lookup.object;
  const claimLabel = objectName("PersistentVolumeClaim", lookup.name, lookup.namespace);
  if (!claim) {
    const next = `kubectl get pvc -n ${lookup.namespace}`;
    const users = view.pod?.object ? ` (pod ${view.pod.object.metadata.name} mounts it)` : "";
    chain.add(
      link({
        ...missing("claim", "PersistentVolumeClaim", lookup.name, lookup.namespace, next),
        summary: `claim ${lookup.namespace}/${lookup.name} does not exist${users}`,
        events: evidence(eventsOf(view, "Pod", view.pod?.object?.metadata.name, lookup.namespace)),
      }),
    );
    return false;
  }
  const claimEvents = eventsOf(
    view,
    "PersistentVolumeClaim",
    lookup.name,
    lookup.namespace,
    claim.metadata.uid,
  );
  const describe = `kubectl describe pvc -n ${lookup.namespace} ${lookup.name}`;
  if (
    !chain.add(
      link({
        step: "claim",
        state: claim.status?.phase === "Lost" ? "failed" : "done",
        object: claimLabel,
        summary: `claim is ${claim.status?.phase ?? "Pending"}, requests ${claim.spec?.resources?.requests?.storage ?? "?"}`,
        ...(claim.status?.phase === "Lost"
          ? {
              cause: `the claim is Lost: its volume ${claim.spec?.volumeName ?? ""} no longer exists (data may be gone)`,
              responsible: { component: "PV controller (kube-controller-manager)" },
              events: evidence(claimEvents),
              next: [describe],
            }
          : {}),
      }),
    )
  )
    return false;

  const volume = view.volume?.object;
  const className = claimClassName(claim);
  const boundToVolume = claim.status?.phase === "Bound" && volume !== undefined;
  // Class: needed to provision; a claim bound to a volume (or pre-bound by volumeName) does not need it.
  const sc = view.storageClass;
  if (className && boundToVolume && !sc?.object) {
    chain.add(
      link({
        step: "class",
        state: "done",
        object: objectName("StorageClass", className),
        summary: `StorageClass ${className} does not exist (no longer needed: the claim is bound)`,
      }),
    );
  } else if (className) {
    if (!sc?.object) {
      const failed = standing(claimEvents, [EVENT_REASONS.provisioningFailed.key]);
      chain.add(
        link({
          step: "class",
          state: "failed",
          object: objectName("StorageClass", className),
          summary: `StorageClass "${className}" does not exist`,
          cause: `storageclass.storage.k8s.io "${className}" not found: the claim can neither be provisioned nor bound until it exists`,
          responsible: { component: "cluster administrator (StorageClass)" },
          details: failed ? [`the PV controller reports: ${failed.message ?? ""}`] : [],
          events: evidence(claimEvents),
          next: [
            "kubectl get storageclass",
            `create StorageClass ${className}, or recreate the claim with an existing storageClassName`,
          ],
        }),
      );
      return false;
    }
    const storageClass = sc.object;
    chain.add(
      link({
        step: "class",
        state: "done",
        object: objectName("StorageClass", className),
        summary: `class ${className}: provisioner ${storageClass.provisioner}, ${storageClass.volumeBindingMode ?? "Immediate"}`,
      }),
    );
  } else if (className === undefined && !claim.spec?.volumeName && !boundToVolume) {
    chain.add(
      link({
        step: "class",
        state: "waiting",
        object: claimLabel,
        summary:
          "the claim names no StorageClass and there is no default class: it waits for a matching PersistentVolume",
        cause:
          "no storageClassName and no volumeName: only a pre-created PV that matches the claim can bind it",
        responsible: { component: "cluster administrator (PersistentVolume or default StorageClass)" },
        events: evidence(claimEvents),
        next: ["kubectl get pv", "kubectl get storageclass"],
      }),
    );
    return false;
  }

  if (claim.spec?.volumeAttributesClassName && !boundToVolume) {
    const vac = view.volumeAttributesClass;
    if (!vac?.object) {
      chain.add(
        link({
          step: "volume-attributes-class",
          state: "waiting",
          object: objectName("VolumeAttributesClass", claim.spec.volumeAttributesClassName),
          summary: `VolumeAttributesClass "${claim.spec.volumeAttributesClassName}" does not exist`,
          cause: `volumeattributesclass.storage.k8s.io "${claim.spec.volumeAttributesClassName}" not found: the external-provisioner does not provision until it exists`,
          responsible: { component: "cluster administrator (VolumeAttributesClass)" },
          events: evidence(claimEvents),
          next: ["kubectl get volumeattributesclass", describe],
        }),
      );
      return false;
    }
    const provisioner = sc?.object?.provisioner;
    if (provisioner && vac.object.driverName !== provisioner) {
      chain.add(
        link({
          step: "volume-attributes-class",
          state: "failed",
          object: objectName("VolumeAttributesClass", vac.name),
          summary: `VolumeAttributesClass ${vac.name} is for driver ${vac.object.driverName}, the class provisions with ${provisioner}`,
          cause: "the VolumeAttributesClass's driverName must equal the StorageClass's provisioner",
          responsible: { component: "cluster administrator (VolumeAttributesClass)" },
          events: evidence(claimEvents),
          next: [describe],
        }),
      );
      return false;
    }
    chain.add(
      link({
        step: "volume-attributes-class",
        state: "done",
        object: objectName("VolumeAttributesClass", vac.name),
        summary: `VolumeAttributesClass ${vac.name} (driver ${vac.object.driverName})`,
      }),
    );
  }

  if (!provisionLink(view, chain, claim, claimEvents)) return false;
  if (!bindLink(view, chain, claim, claimEvents)) return false;
  if (!modifyLink(chain, claim, claimEvents)) return false;
  return resizeLink(view, chain, claim, claimEvents);
}

/** A VolumeAttributesClass change on a bound claim (ControllerModifyVolume by the external-resizer). */
function modifyLink(chain: Chain, claim: PersistentVolumeClaim, claimEvents: CoreEvent[]): boolean {
  const modify = claim.status?.modifyVolumeStatus;
  if (!modify) return true;
  const ns = claim.metadata.namespace!;
  const name = claim.metadata.name!;
  const target = modify.targetVolumeAttributesClassName ?? claim.spec?.volumeAttributesClassName ?? "";
  const current = claim.status?.currentVolumeAttributesClassName;
  const infeasible = modify.status === "Infeasible";
  const failedEvent = standing(claimEvents, ["VolumeModifyFailed"], ["VolumeModifySuccessful"]);
  const condition = claim.status?.conditions?.find((c) => /Modify/.test(c.type) && c.message);
  const failed = failedEvent ?? (condition ? { message: condition.message } : undefined);
  const resizer = claim.metadata.annotations?.[STORAGE_RESIZER];
  chain.add(
    link({
      step: "modify",
      state: infeasible ? "failed" : "waiting",
      object: objectName("PersistentVolumeClaim", name, ns),
      summary: `VolumeAttributesClass change to ${target} is ${modify.status}${current ? ` (current ${current})` : ""}`,
      cause: infeasible
        ? `the driver refused the new attributes as infeasible${failed ? `: ${failed.message ?? ""}` : ""}; set volumeAttributesClassName back to ${current ?? "its previous value"} or to a class the driver accepts`
        : failed
          ? `ControllerModifyVolume failed and is retried: ${failed.message ?? ""}`
          : "waits for the external-resizer to call ControllerModifyVolume",
      responsible: {
        component: resizer ? `external-resizer for ${resizer}` : "external-resizer",
        annotation: STORAGE_RESIZER,
      },
      events: evidence(claimEvents),
      next: [`kubectl describe pvc -n ${ns} ${name}`],
    }),
  );
  return false;
}

function provisionLink(
  view: ClusterView,
  chain: Chain,
  claim: PersistentVolumeClaim,
  claimEvents: CoreEvent[],
): boolean {
  const ns = claim.metadata.namespace!;
  const name = claim.metadata.name!;
  const claimLabel = objectName("PersistentVolumeClaim", name, ns);
  const describe = `kubectl describe pvc -n ${ns} ${name}`;
  const volume = view.volume?.object;
  if (volume) {
    return chain.add(
      link({
        step: "provision",
        state: "done",
        object: objectName("PersistentVolume", volume.metadata.name!),
        summary: `volume ${volume.metadata.name} exists${volume.spec?.csi ? ` (driver ${volume.spec.csi.driver}, handle ${volume.spec.csi.volumeHandle})` : ""}`,
      }),
    );
  }
  if (claim.spec?.volumeName) {
    // Pre-bound to a volume that is not there.
    chain.add(
      link({
        step: "provision",
        state: "waiting",
        object: objectName("PersistentVolume", claim.spec.volumeName),
        summary: `the claim asks for volume ${claim.spec.volumeName}, which does not exist`,
        cause: `persistentvolumes "${claim.spec.volumeName}" not found: a pre-bound claim waits for that exact volume`,
        responsible: { component: "cluster administrator (PersistentVolume)" },
        events: evidence(claimEvents),
        next: ["kubectl get pv", describe],
      }),
    );
    return false;
  }
  const storageClass = view.storageClass?.object;
  if (!storageClass) return false;
  const annotations = claim.metadata.annotations ?? {};
  const users = view.podsUsingClaim;
  if (storageClass.volumeBindingMode === "WaitForFirstConsumer" && !annotations[SELECTED_NODE]) {
    if (users.length === 0) {
      chain.add(
        link({
          step: "provision",
          state: "waiting",
          object: claimLabel,
          summary: "waits for first consumer: no pod uses this claim",
          cause: `StorageClass ${storageClass.metadata.name} has volumeBindingMode WaitForFirstConsumer: the volume is provisioned only once a pod that uses the claim is scheduled (annotation ${SELECTED_NODE})`,
          responsible: { component: "kube-scheduler", annotation: SELECTED_NODE },
          events: evidence(claimEvents),
          next: [`create a pod with a volume persistentVolumeClaim.claimName: ${name} in namespace ${ns}`],
        }),
      );
      return false;
    }
    const pod = users[0]!;
    if (!pod.spec?.nodeName) {
      // The scheduler's decision is the next link of the pod's chain; say so here with its events.
      const scheduling = eventsOf(view, "Pod", pod.metadata.name, ns);
      chain.add(
        link({
          step: "provision",
          state: "waiting",
          object: claimLabel,
          summary: `waits for the scheduler to place pod ${pod.metadata.name} (WaitForFirstConsumer)`,
          cause:
            schedulingCause(view, pod, scheduling) ??
            `pod ${pod.metadata.name} is not scheduled yet: the scheduler sets ${SELECTED_NODE} on the claim when it picks a node`,
          responsible: { component: "kube-scheduler (volume binding)", annotation: SELECTED_NODE },
          details: topologyDetails(view),
          events: evidence([...scheduling, ...claimEvents]),
          next: [`kubectl describe pod -n ${ns} ${pod.metadata.name}`, describe],
        }),
      );
      return false;
    }
  }
  const provisioner = annotations[STORAGE_PROVISIONER] ?? annotations[BETA_STORAGE_PROVISIONER];
  if (!provisioner) {
    chain.add(
      link({
        step: "provision",
        state: "waiting",
        object: claimLabel,
        summary: `waits for the PV controller to hand the claim to provisioner ${storageClass.provisioner}`,
        cause: `annotation ${STORAGE_PROVISIONER} is not set: the PV controller (kube-controller-manager, or csikit controllers) has not processed the claim`,
        responsible: {
          component: "PV controller (kube-controller-manager)",
          annotation: STORAGE_PROVISIONER,
        },
        events: evidence(claimEvents),
        next: [describe, "check that kube-controller-manager (csikit controllers) is running"],
      }),
    );
    return false;
  }
  const component = `external-provisioner for ${provisioner}`;
  const details: string[] = [];
  const causes: string[] = [];
  for (const secret of view.secrets)
    if (!secret.exists && secret.parameter.includes("provisioner"))
      causes.push(
        `secret ${secret.namespace}/${secret.name} (StorageClass parameter ${secret.parameter}) does not exist: CreateVolume cannot be called without it`,
      );
  if (view.csiDriver && !view.csiDriver.object)
    details.push(`CSIDriver ${provisioner} does not exist: is the driver installed?`);
  const lease = leaseOf(view, "provisioner", provisioner);
  if (lease?.expired) causes.push(lease.text);
  else if (lease) details.push(lease.text);
  const failed = standing(
    claimEvents,
    [EVENT_REASONS.provisioningFailed.key],
    [EVENT_REASONS.provisioningSucceeded.key],
  );
  const fromProvisioner = claimEvents.some(
    (event) =>
      [
        EVENT_REASONS.provisioning.key,
        EVENT_REASONS.provisioningFailed.key,
        EVENT_REASONS.provisioningSucceeded.key,
      ].includes(event.reason ?? "") && !(event.message ?? "").startsWith("storageclass.storage.k8s.io"),
  );
  if (failed) causes.push(`the provisioner reports: ${failed.message ?? ""}`);
  else if (!fromProvisioner && !lease)
    causes.push(
      `no event from the ${component}: it is not running, not leader, or serves another driver name (it has never reported Provisioning on this claim)`,
    );
  chain.add(
    link({
      step: "provision",
      state: failed || causes.length > 0 ? "failed" : "waiting",
      object: claimLabel,
      summary: `waits for the ${component} to create the volume (CreateVolume)`,
      cause: causes.length > 0 ? causes.join("; ") : "CreateVolume is in progress or queued",
      responsible: { component, annotation: STORAGE_PROVISIONER },
      details,
      events: evidence(claimEvents),
      next: [
        describe,
        eventsCommand(name, ns),
        `kubectl logs <the ${component} pod>   # csikit up: <state-dir>/logs/provisioner.log`,
      ],
    }),
  );
  return false;
}

function bindLink(
  view: ClusterView,
  chain: Chain,
  claim: PersistentVolumeClaim,
  claimEvents: CoreEvent[],
): boolean {
  const volume = view.volume!.object!;
  const ns = claim.metadata.namespace!;
  const name = claim.metadata.name!;
  const ref = volume.spec?.claimRef;
  const bound =
    claim.status?.phase === "Bound" &&
    claim.spec?.volumeName === volume.metadata.name &&
    volume.status?.phase === "Bound";
  if (bound)
    return chain.add(
      link({
        step: "bind",
        state: "done",
        object: objectName("PersistentVolume", volume.metadata.name!),
        summary: `claim and volume are Bound${claim.metadata.annotations?.[BIND_COMPLETED] ? ` (${BIND_COMPLETED})` : ""}`,
      }),
    );
  const mismatch = ref && (ref.name !== name || ref.namespace !== ns);
  chain.add(
    link({
      step: "bind",
      state: mismatch ? "failed" : "waiting",
      object: objectName("PersistentVolume", volume.metadata.name!),
      summary: mismatch
        ? `volume ${volume.metadata.name} is bound to another claim, ${ref.namespace}/${ref.name}`
        : `waits for the PV controller to bind claim and volume ${volume.metadata.name} (claim ${claim.status?.phase ?? "Pending"}, volume ${volume.status?.phase ?? "Pending"})`,
      cause: mismatch
        ? "a volume binds one claim only"
        : `the PV controller sets spec.volumeName, the phases and ${BIND_COMPLETED}; it has not yet`,
      responsible: { component: "PV controller (kube-controller-manager)", annotation: BIND_COMPLETED },
      events: evidence([...claimEvents, ...eventsOf(view, "PersistentVolume", volume.metadata.name)]),
      next: [`kubectl describe pvc -n ${ns} ${name}`, `kubectl describe pv ${volume.metadata.name}`],
    }),
  );
  return false;
}

const RESIZE_FAILED = ["VolumeResizeFailed", "FileSystemResizeFailed", "ExternalExpanding"];

function resizeLink(
  view: ClusterView,
  chain: Chain,
  claim: PersistentVolumeClaim,
  claimEvents: CoreEvent[],
): boolean {
  const requested = tryParseQuantity(claim.spec?.resources?.requests?.storage);
  const capacity = tryParseQuantity(claim.status?.capacity?.storage);
  const statuses = claim.status?.allocatedResourceStatuses ?? {};
  const resizeStatus = statuses.storage;
  if (!requested || !capacity || (compareQuantities(requested, capacity) <= 0 && !resizeStatus)) return true;
  const ns = claim.metadata.namespace!;
  const name = claim.metadata.name!;
  const label = objectName("PersistentVolumeClaim", name, ns);
  const describe = `kubectl describe pvc -n ${ns} ${name}`;
  const want = claim.spec?.resources?.requests?.storage;
  const have = claim.status?.capacity?.storage;
  const resizer = claim.metadata.annotations?.[STORAGE_RESIZER];
  const component = resizer ? `external-resizer for ${resizer}` : "external-resizer";
  const storageClass = view.storageClass?.object;
  const failedEvent = standing(
    claimEvents,
    ["VolumeResizeFailed", "FileSystemResizeFailed"],
    ["VolumeResizeSuccessful", "FileSystemResizeSuccessful"],
  );
  const conditions = (claim.status?.conditions ?? []).map(
    (c) => `condition ${c.type}=${c.status}${c.message ? `: ${c.message}` : ""}`,
  );
  if (storageClass && storageClass.allowVolumeExpansion !== true) {
    chain.add(
      link({
        step: "resize",
        state: "failed",
        object: label,
        summary: `requests ${want}, has ${have}: StorageClass ${storageClass.metadata.name} does not allow expansion`,
        cause: "allowVolumeExpansion is not true on the class: a claim of it cannot grow",
        responsible: { component: "cluster administrator (StorageClass)" },
        events: evidence(claimEvents.filter((e) => RESIZE_FAILED.includes(e.reason ?? ""))),
        next: [describe],
      }),
    );
    return false;
  }
  if (resizeStatus === "ControllerResizeInfeasible" || resizeStatus === "NodeResizeInfeasible") {
    chain.add(
      link({
        step: "resize",
        state: "failed",
        object: label,
        summary: `resize to ${want} is infeasible (${resizeStatus}); capacity stays ${have}`,
        cause: `the ${resizeStatus === "NodeResizeInfeasible" ? "node" : "driver"} refused the expansion as infeasible${failedEvent ? `: ${failedEvent.message ?? ""}` : ""}; it is not retried until the request changes`,
        responsible: {
          component: resizeStatus === "NodeResizeInfeasible" ? "kubelet (NodeExpandVolume)" : component,
          annotation: STORAGE_RESIZER,
        },
        details: conditions,
        events: evidence(
          claimEvents.filter((e) => RESIZE_FAILED.includes(e.reason ?? "") || e.type === "Warning"),
        ),
        next: [
          `kubectl patch pvc -n ${ns} ${name} --type=merge -p '{"spec":{"resources":{"requests":{"storage":"${have}"}}}}'   # recover: request a size the driver can give`,
          describe,
        ],
      }),
    );
    return false;
  }
  const nodePending = resizeStatus === "NodeResizePending" || resizeStatus === "NodeResizeInProgress";
  chain.add(
    link({
      step: "resize",
      state: failedEvent ? "failed" : "waiting",
      object: label,
      summary: `requests ${want}, has ${have}: resize ${resizeStatus ?? "not started"}`,
      cause: failedEvent
        ? `the resize failed: ${failedEvent.message ?? ""}`
        : nodePending
          ? "the controller expanded the volume; the file system grows when the kubelet runs NodeExpandVolume (a pod must use the claim)"
          : `waits for the ${component} to call ControllerExpandVolume`,
      responsible: {
        component: nodePending ? "kubelet (NodeExpandVolume)" : component,
        annotation: STORAGE_RESIZER,
      },
      details: conditions,
      events: evidence(claimEvents),
      next: [describe],
    }),
  );
  return false;
}

// ---- pod: schedule, node, registration, attach, mount ----------------------------------------

function schedulingCause(view: ClusterView, pod: Pod, podEvents: CoreEvent[]): string | undefined {
  const failed = standing(podEvents, ["FailedScheduling"], ["Scheduled"]);
  const condition = pod.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
  const message = failed?.message ?? condition?.message;
  if (!message) return undefined;
  const topology = topologyDetails(view);
  return `the scheduler reports: ${message}${topology.length > 0 ? ` (${topology[0]})` : ""}`;
}

/** What the volume and class allow in topology, against the nodes there are. */
function topologyDetails(view: ClusterView): string[] {
  const details: string[] = [];
  const volume = view.volume?.object;
  const terms = volume?.spec?.nodeAffinity?.required?.nodeSelectorTerms;
  if (terms && terms.length > 0) {
    const fit = view.nodes.filter((node) => terms.some((term) => termMatches(term, node)));
    details.push(
      `volume ${volume.metadata.name} may be used only on nodes matching ${formatTerms(terms)}: ${fit.length}/${view.nodes.length} node(s) match${fit.length > 0 ? ` (${fit.map((n) => n.metadata.name).join(", ")})` : ""}`,
    );
  }
  const allowed = view.storageClass?.object?.allowedTopologies;
  if (!volume && allowed && allowed.length > 0) {
    const asTerms: NodeSelectorTerm[] = allowed.map((term) => ({
      matchExpressions: (term.matchLabelExpressions ?? []).map((e) => ({
        key: e.key,
        operator: "In",
        values: e.values,
      })),
    }));
    const fit = view.nodes.filter((node) => asTerms.some((term) => termMatches(term, node)));
    details.push(
      `StorageClass ${view.storageClass!.name} allows topology ${formatTerms(asTerms)}: ${fit.length}/${view.nodes.length} node(s) match`,
    );
  }
  return details;
}

function podLinks(view: ClusterView, chain: Chain, pod: Pod): void {
  const ns = pod.metadata.namespace!;
  const name = pod.metadata.name!;
  const label = objectName("Pod", name, ns);
  const podEvents = eventsOf(view, "Pod", name, ns, pod.metadata.uid);
  const describe = `kubectl describe pod -n ${ns} ${name}`;
  const nodeName = pod.spec?.nodeName;
  if (!nodeName) {
    const cause = schedulingCause(view, pod, podEvents);
    chain.add(
      link({
        step: "schedule",
        state: cause ? "failed" : "waiting",
        object: label,
        summary: "the pod is not scheduled to a node",
        cause:
          cause ??
          "no scheduling decision yet: is the scheduler running (and is spec.schedulerName its name)?",
        responsible: {
          component: `scheduler ${pod.spec?.schedulerName ?? "default-scheduler"}`,
          annotation: SELECTED_NODE,
        },
        details: topologyDetails(view),
        events: evidence(podEvents),
        next: [describe, "kubectl get nodes --show-labels"],
      }),
    );
    return;
  }
  if (
    !chain.add(
      link({ step: "schedule", state: "done", object: label, summary: `scheduled to node ${nodeName}` }),
    )
  )
    return;

  const node = view.node?.object;
  if (!node) {
    chain.add(
      link({
        step: "node",
        state: "failed",
        object: objectName("Node", nodeName),
        summary: `node ${nodeName} does not exist`,
        cause: `the pod is bound to node ${nodeName}, which is gone: nothing will stage or publish its volumes there`,
        responsible: { component: "pod garbage collector / the pod's owner (recreates it elsewhere)" },
        events: evidence(podEvents),
        next: [`kubectl delete pod -n ${ns} ${name}`, "kubectl get nodes"],
      }),
    );
    return;
  }
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  if (ready && ready.status !== "True") {
    chain.add(
      link({
        step: "node",
        state: "failed",
        object: objectName("Node", nodeName),
        summary: `node ${nodeName} is not Ready (${ready.status})`,
        cause: `the node's kubelet is not reporting${ready.message ? `: ${ready.message}` : ""}`,
        responsible: { component: `kubelet on ${nodeName}` },
        events: evidence(eventsOf(view, "Node", nodeName)),
        next: [`kubectl describe node ${nodeName}`],
      }),
    );
    return;
  }
  chain.add(
    link({
      step: "node",
      state: "done",
      object: objectName("Node", nodeName),
      summary: `node ${nodeName} exists`,
    }),
  );

  const volume = view.volume?.object;
  const driver = volume?.spec?.csi?.driver;
  if (driver) {
    if (!registrationLink(view, chain, pod, driver, podEvents)) return;
    if (!attachLink(view, chain, pod, volume, driver, podEvents)) return;
  }
  mountLink(view, chain, pod, podEvents);
}

function registrationLink(
  view: ClusterView,
  chain: Chain,
  pod: Pod,
  driver: string,
  podEvents: CoreEvent[],
): boolean {
  const nodeName = pod.spec!.nodeName!;
  const csiNode = view.csiNode?.object;
  const registered = csiNode?.spec.drivers.find((d) => d.name === driver);
  if (registered)
    return chain.add(
      link({
        step: "driver-registration",
        state: "done",
        object: objectName("CSINode", nodeName),
        summary: `driver ${driver} registered on ${nodeName} (node ID ${registered.nodeID})`,
      }),
    );
  const mountFailed = podEvents.filter(
    (e) => e.reason === "FailedMount" || e.reason === "FailedAttachVolume",
  );
  const details: string[] = [];
  if (view.csiDriver && !view.csiDriver.object)
    details.push(`CSIDriver ${driver} does not exist either: is the driver installed?`);
  chain.add(
    link({
      step: "driver-registration",
      state: "failed",
      object: objectName("CSINode", nodeName),
      summary: `driver ${driver} is not registered on node ${nodeName}`,
      cause: `${csiNode ? `CSINode ${nodeName} lists ${csiNode.spec.drivers.map((d) => d.name).join(", ") || "no driver"}` : `node ${nodeName} has no CSINode`}: the driver's node plugin (node-driver-registrar + driver) is not running there, so the kubelet cannot stage or publish the volume`,
      responsible: { component: `node-driver-registrar and the ${driver} node plugin on ${nodeName}` },
      details,
      events: evidence(mountFailed),
      next: [
        `kubectl get csinode ${nodeName} -o yaml`,
        `kubectl get pods -A -o wide --field-selector spec.nodeName=${nodeName}`,
      ],
    }),
  );
  return false;
}

function attachLink(
  view: ClusterView,
  chain: Chain,
  pod: Pod,
  volume: PersistentVolume,
  driver: string,
  podEvents: CoreEvent[],
): boolean {
  const nodeName = pod.spec!.nodeName!;
  const csiDriver = view.csiDriver?.object;
  if (csiDriver && csiDriver.spec.attachRequired === false)
    return chain.add(
      link({
        step: "attach",
        state: "done",
        object: objectName("CSIDriver", driver),
        summary: "attach not required (CSIDriver attachRequired: false)",
      }),
    );
  const attachment = view.attachment?.object;
  const finalizer = attacherFinalizer(driver);
  if (!attachment) {
    const failed = standing(podEvents, ["FailedAttachVolume"], ["SuccessfulAttachVolume"]);
    chain.add(
      link({
        step: "attach",
        state: failed ? "failed" : "waiting",
        object: objectName("PersistentVolume", volume.metadata.name!),
        summary: `no VolumeAttachment for volume ${volume.metadata.name} on node ${nodeName}`,
        cause: failed
          ? `the attach/detach controller reports: ${failed.message ?? ""}`
          : "the attach/detach controller (kube-controller-manager) creates it once the pod is scheduled: is it running?",
        responsible: { component: "attach/detach controller (kube-controller-manager)" },
        events: evidence(podEvents),
        next: [
          `kubectl get volumeattachments`,
          `kubectl describe pod -n ${pod.metadata.namespace} ${pod.metadata.name}`,
        ],
      }),
    );
    return false;
  }
  return attachmentLink(view, chain, attachment.metadata.name!, driver, finalizer);
}

function attachmentLink(
  view: ClusterView,
  chain: Chain,
  vaName: string,
  driver: string,
  finalizer: string,
): boolean {
  const attachment = view.attachment!.object!;
  const label = objectName("VolumeAttachment", vaName);
  if (attachment.status?.attached)
    return chain.add(
      link({
        step: "attach",
        state: "done",
        object: label,
        summary: `attached to ${attachment.spec.nodeName}`,
      }),
    );
  const error = attachment.status?.attachError;
  const component = `external-attacher for ${driver}`;
  const details: string[] = [];
  const causes: string[] = [];
  if (error)
    causes.push(
      `ControllerPublishVolume failed${error.errorCode !== undefined ? ` (gRPC code ${error.errorCode}${grpcName(error.errorCode)})` : ""}${error.time ? ` at ${error.time}` : ""}: ${error.message ?? ""}`,
    );
  for (const secret of view.secrets)
    if (!secret.exists && secret.parameter.includes("controller-publish"))
      causes.push(
        `secret ${secret.namespace}/${secret.name} (StorageClass parameter ${secret.parameter}) does not exist`,
      );
  const lease = leaseOf(view, "attacher", driver);
  if (lease?.expired) causes.push(lease.text);
  else if (lease) details.push(lease.text);
  const vaEvents = eventsOf(view, "VolumeAttachment", vaName);
  if (
    !error &&
    !lease &&
    !(attachment.metadata.finalizers ?? []).includes(finalizer) &&
    vaEvents.length === 0
  )
    causes.push(
      `the ${component} has not touched it (no finalizer ${finalizer}, no event): it is not running, not leader, or serves another driver name`,
    );
  chain.add(
    link({
      step: "attach",
      state: causes.length > 0 ? "failed" : "waiting",
      object: label,
      summary: `volume not attached to ${attachment.spec.nodeName} yet`,
      cause: causes.length > 0 ? causes.join("; ") : "ControllerPublishVolume is in progress or queued",
      responsible: { component, finalizer },
      details,
      events: evidence([
        ...vaEvents,
        ...eventsOf(
          view,
          "Pod",
          view.pod?.object?.metadata.name,
          view.pod?.object?.metadata.namespace,
        ).filter((e) => e.reason === "FailedAttachVolume"),
      ]),
      next: [
        `kubectl describe volumeattachment ${vaName}`,
        `kubectl logs <the ${component} pod>   # csikit up: <state-dir>/logs/attacher.log`,
      ],
    }),
  );
  return false;
}

function grpcName(code: number): string {
  const name = GRPC_CODE_NAMES[code];
  return name ? ` ${name}` : "";
}

/** A VolumeAttachment asked about with no pod using its volume on its node. */
function attachmentOnly(view: ClusterView, chain: Chain): void {
  const attachment = view.attachment!.object!;
  attachmentLink(
    view,
    chain,
    attachment.metadata.name!,
    attachment.spec.attacher,
    attacherFinalizer(attachment.spec.attacher),
  );
}

function mountLink(view: ClusterView, chain: Chain, pod: Pod, podEvents: CoreEvent[]): void {
  const ns = pod.metadata.namespace!;
  const name = pod.metadata.name!;
  const label = objectName("Pod", name, ns);
  const phase = pod.status?.phase ?? "Pending";
  if (phase === "Running" || phase === "Succeeded") {
    chain.add(link({ step: "mount", state: "done", object: label, summary: "volumes staged and published" }));
    chain.add(link({ step: "pod", state: "done", object: label, summary: `pod is ${phase}` }));
    return;
  }
  const failed = standing(podEvents, ["FailedMount", "FailedMapVolume"], ["Started", "Pulled", "Created"]);
  const causes: string[] = [];
  for (const secret of view.secrets)
    if (
      !secret.exists &&
      (secret.parameter.includes("node-stage") || secret.parameter.includes("node-publish"))
    )
      causes.push(
        `secret ${secret.namespace}/${secret.name} (StorageClass parameter ${secret.parameter}) does not exist`,
      );
  if (failed) causes.push(`the kubelet reports: ${failed.message ?? ""}`);
  chain.add(
    link({
      step: "mount",
      state: causes.length > 0 ? "failed" : "waiting",
      object: label,
      summary: `pod is ${phase}: its volumes are not staged and published yet`,
      cause:
        causes.length > 0
          ? causes.join("; ")
          : "the kubelet (csikit node) has not finished NodeStageVolume/NodePublishVolume",
      responsible: { component: `kubelet on ${pod.spec?.nodeName} (NodeStageVolume, NodePublishVolume)` },
      events: evidence(podEvents),
      next: [`kubectl describe pod -n ${ns} ${name}`],
    }),
  );
}

// ---- snapshots -----------------------------------------------------------------------------

function snapshotPhase(view: ClusterView): string {
  const snapshot = view.snapshot?.object;
  if (!snapshot) return "NotFound";
  const state = snapshot.status?.readyToUse ? "ready" : snapshot.status?.error ? "error" : "not ready";
  return snapshot.metadata.deletionTimestamp ? `${state} (Terminating)` : state;
}

function snapshotChain(view: ClusterView, chain: Chain): void {
  const { target } = view;
  const ns = target.namespace!;
  const snapshot = view.snapshot?.object;
  if (!snapshot) {
    chain.add(
      missing("snapshot-ready", "VolumeSnapshot", target.name, ns, `kubectl get volumesnapshots -n ${ns}`),
    );
    return;
  }
  for (const deletion of deletionLinks(view)) if (!chain.add(deletion)) return;
  const label = objectName("VolumeSnapshot", target.name, ns);
  const snapshotEvents = eventsOf(view, "VolumeSnapshot", target.name, ns, snapshot.metadata.uid);
  const describe = `kubectl describe volumesnapshot -n ${ns} ${target.name}`;
  const content = view.snapshotContent?.object;
  const contentEvents = content ? eventsOf(view, "VolumeSnapshotContent", content.metadata.name) : [];
  const className = snapshot.spec.volumeSnapshotClassName;
  const sc = view.snapshotClass;
  if (snapshot.spec.source.persistentVolumeClaimName !== undefined) {
    if (!sc?.object) {
      chain.add(
        link({
          step: "snapshot-class",
          state: "failed",
          object: className ? objectName("VolumeSnapshotClass", className) : label,
          summary: className
            ? `VolumeSnapshotClass "${className}" does not exist`
            : "no VolumeSnapshotClass named and no default class for the driver",
          cause: className
            ? `volumesnapshotclass.snapshot.storage.k8s.io "${className}" not found`
            : `no VolumeSnapshotClass of the claim's driver is annotated ${ANNOTATIONS.isDefaultSnapshotClass.key}`,
          responsible: { component: "cluster administrator (VolumeSnapshotClass)" },
          events: evidence(snapshotEvents),
          next: ["kubectl get volumesnapshotclass", describe],
        }),
      );
      return;
    }
    chain.add(
      link({
        step: "snapshot-class",
        state: "done",
        object: objectName("VolumeSnapshotClass", sc.name),
        summary: `class ${sc.name}: driver ${sc.object.driver}, deletionPolicy ${sc.object.deletionPolicy}`,
      }),
    );
    const claim = view.claim?.object;
    const claimName = snapshot.spec.source.persistentVolumeClaimName;
    if (content) {
      // Snapshotted already: the source may have changed or gone since, which no longer matters.
      chain.add(
        link({
          step: "snapshot-source",
          state: "done",
          object: objectName("PersistentVolumeClaim", claimName, ns),
          summary: `source claim ${claimName}${content.spec.source.volumeHandle ? ` (volume ${content.spec.source.volumeHandle})` : ""}`,
        }),
      );
    } else {
      if (!claim || claim.status?.phase !== "Bound") {
        chain.add(
          link({
            step: "snapshot-source",
            state: claim ? "waiting" : "failed",
            object: objectName("PersistentVolumeClaim", claimName, ns),
            summary: claim
              ? `source claim ${claimName} is ${claim.status?.phase ?? "Pending"}, not Bound`
              : `source claim ${claimName} does not exist`,
            cause: claim
              ? "the snapshot-controller snapshots only a Bound claim; run `csikit why pvc` on the claim"
              : `persistentvolumeclaims "${claimName}" not found`,
            responsible: { component: "snapshot-controller" },
            events: evidence(snapshotEvents),
            next: [`csikit why pvc -n ${ns} ${claimName}`, describe],
          }),
        );
        return;
      }
      chain.add(
        link({
          step: "snapshot-source",
          state: "done",
          object: objectName("PersistentVolumeClaim", claimName, ns),
          summary: `source claim ${claimName} is Bound`,
        }),
      );
    }
  }
  if (!content) {
    const contentName =
      snapshot.status?.boundVolumeSnapshotContentName ?? snapshot.spec.source.volumeSnapshotContentName;
    const lease = view.leases.find((l) => l.metadata.name === "snapshot-controller-leader");
    const expired = lease ? leaseOf(view, "snapshot-controller", "") : undefined;
    chain.add(
      link({
        step: "snapshot-content",
        state: snapshot.status?.error || expired?.expired ? "failed" : "waiting",
        object: contentName ? objectName("VolumeSnapshotContent", contentName) : label,
        summary: contentName
          ? `VolumeSnapshotContent ${contentName} does not exist`
          : "no VolumeSnapshotContent bound yet",
        cause:
          [
            snapshot.status?.error
              ? `the snapshot reports: ${snapshot.status.error.message ?? ""}`
              : undefined,
            expired?.expired ? expired.text : undefined,
          ]
            .filter((x) => x !== undefined)
            .join("; ") || "the snapshot-controller creates snapcontent-<snapshot UID>: is it running?",
        responsible: { component: "snapshot-controller", finalizer: FINALIZERS.volumeSnapshotBound.key },
        events: evidence(snapshotEvents),
        next: [describe],
      }),
    );
    return;
  }
  chain.add(
    link({
      step: "snapshot-content",
      state: "done",
      object: objectName("VolumeSnapshotContent", content.metadata.name!),
      summary: `bound to content ${content.metadata.name} (driver ${content.spec.driver})`,
    }),
  );
  if (snapshot.status?.readyToUse && content.status?.readyToUse) {
    chain.add(
      link({
        step: "snapshot-ready",
        state: "done",
        object: label,
        summary: `ready to use${snapshot.status.restoreSize ? `, restore size ${snapshot.status.restoreSize}` : ""}`,
      }),
    );
    return;
  }
  const error = content.status?.error ?? snapshot.status?.error;
  const component = `external-snapshotter (csi-snapshotter) for ${content.spec.driver}`;
  const lease = leaseOf(view, "snapshotter", content.spec.driver);
  const causes: string[] = [];
  if (error)
    causes.push(`${content.status?.error ? "the content" : "the snapshot"} reports: ${error.message ?? ""}`);
  if (lease?.expired) causes.push(lease.text);
  const beingCreated = content.metadata.annotations?.[ANNOTATIONS.volumeSnapshotBeingCreated.key] === "yes";
  if (!error && !content.status && !lease && contentEvents.length === 0)
    causes.push(
      `the ${component} has not reported on the content: it is not running or serves another driver name`,
    );
  chain.add(
    link({
      step: "snapshot-ready",
      state: causes.length > 0 ? "failed" : "waiting",
      object: objectName("VolumeSnapshotContent", content.metadata.name!),
      summary: `not ready to use${beingCreated ? " (CreateSnapshot sent, not answered)" : content.status?.snapshotHandle ? ` (handle ${content.status.snapshotHandle}, the driver still processes it)` : ""}`,
      cause:
        causes.length > 0
          ? causes.join("; ")
          : "the driver has not reported the snapshot ready (CreateSnapshot ready_to_use false)",
      responsible: {
        component,
        ...(beingCreated ? { annotation: ANNOTATIONS.volumeSnapshotBeingCreated.key } : {}),
      },
      details: lease && !lease.expired ? [lease.text] : [],
      events: evidence([...snapshotEvents, ...contentEvents]),
      next: [describe, `kubectl describe volumesnapshotcontent ${content.metadata.name}`],
    }),
  );
}
