// core/v1 namespaces, nodes (+status) and pods (+status, +binding): defaults, the validation
// the volume flow depends on, graceful pod deletion, field selectors and printer columns as
// kube-apiserver has them.

import { jsonEqual } from "../../base/index.ts";
import {
  fieldDuplicate,
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  isDNS1123Label,
  LABELS,
  nameIsDNSLabel,
  renderValue,
  tryParseQuantity,
} from "../../api/index.ts";
import type { FieldCause, KubeObject, ResourceDef } from "../rest/resource.ts";
import {
  AGE_COLUMN,
  NAME_COLUMN,
  age,
  at,
  canonicalizeResourceList,
  child,
  column,
  defineResource,
  isRecord,
  metaOf,
  nameOf,
  oneOf,
  orNone,
  setDefault,
  str,
} from "./common.ts";
import type { Obj } from "./common.ts";

// ---- Namespace -------------------------------------------------------------------------

export const namespaces: ResourceDef = defineResource({
  group: "",
  version: "v1",
  resource: "namespaces",
  kind: "Namespace",
  namespaced: false,
  shortNames: ["ns"],
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  subresources: ["status"],
  nameValidator: nameIsDNSLabel,
  defaults(object) {
    // Every namespace carries its own name as a label (NamespaceDefaultLabelName).
    const meta = child(object, "metadata");
    const name = str(meta.name);
    if (name !== "") child(meta, "labels")[LABELS.metadataName.key] = name;
    const spec = child(object, "spec");
    setDefault(spec, "finalizers", ["kubernetes"]);
    setDefault(child(object, "status"), "phase", "Active");
  },
  validateStatus(object) {
    const phase = at(object, "status.phase");
    return phase === undefined ? [] : oneOf("status.phase", phase, ["Active", "Terminating"]);
  },
  fieldSelectors: { "status.phase": (object) => str(at(object, "status.phase")) },
  specChanged: () => false,
  columns: [NAME_COLUMN, column("Status", "string", "The status of the namespace"), AGE_COLUMN],
  row(object, now) {
    return [nameOf(object), str(at(object, "status.phase")), age(object, now)];
  },
  patchStrategies: { "status.conditions": { mergeKey: "type" } },
  returnDeletedObject: true,
});

// ---- Node ------------------------------------------------------------------------------

function conditionStatus(object: Obj, type: string): string | undefined {
  const conditions = at(object, "status.conditions");
  if (!Array.isArray(conditions)) return undefined;
  for (const condition of conditions) {
    if (isRecord(condition) && condition.type === type) return str(condition.status);
  }
  return undefined;
}

function nodeRoles(object: Obj): string {
  const labels = metaOf(object).labels;
  const roles = new Set<string>();
  if (isRecord(labels)) {
    for (const [key, value] of Object.entries(labels)) {
      if (key.startsWith("node-role.kubernetes.io/")) {
        const role = key.slice("node-role.kubernetes.io/".length);
        if (role !== "") roles.add(role);
      } else if (key === "kubernetes.io/role" && typeof value === "string" && value !== "") {
        roles.add(value);
      }
    }
  }
  return roles.size === 0 ? "<none>" : [...roles].sort().join(",");
}

function nodeAddress(object: Obj, type: string): string {
  const addresses = at(object, "status.addresses");
  if (Array.isArray(addresses)) {
    for (const address of addresses) {
      if (isRecord(address) && address.type === type) return str(address.address);
    }
  }
  return "<none>";
}

function unknownIfEmpty(value: unknown): string {
  return str(value) === "" ? "<unknown>" : str(value);
}

export const nodes: ResourceDef = defineResource({
  group: "",
  version: "v1",
  resource: "nodes",
  kind: "Node",
  namespaced: false,
  shortNames: ["no"],
  subresources: ["status"],
  // The kubelet registers its Node with status (capacity, conditions, addresses).
  keepStatusOnCreate: true,
  defaults(object) {
    canonicalizeResourceList(object, "status.capacity");
    canonicalizeResourceList(object, "status.allocatable");
    // Allocatable defaults to capacity (SetDefaults_NodeStatus).
    const capacity = at(object, "status.capacity");
    if (isRecord(capacity) && at(object, "status.allocatable") === undefined) {
      child(object, "status").allocatable = structuredClone(capacity);
    }
  },
  validate(object) {
    const causes: FieldCause[] = [];
    const taints = at(object, "spec.taints");
    if (Array.isArray(taints)) {
      taints.forEach((taint: unknown, i) => {
        if (str(at(taint, "key")) === "") causes.push(fieldRequired(`spec.taints[${i}].key`));
        causes.push(
          ...oneOf(`spec.taints[${i}].effect`, at(taint, "effect"), [
            "NoExecute",
            "NoSchedule",
            "PreferNoSchedule",
          ]),
        );
      });
    }
    return causes;
  },
  fieldSelectors: { "spec.unschedulable": (object) => String(at(object, "spec.unschedulable") === true) },
  specChanged: () => false,
  columns: [
    NAME_COLUMN,
    column("Status", "string", "The status of the node"),
    column("Roles", "string", "The roles of the node"),
    AGE_COLUMN,
    column("Version", "string", "Kubelet Version reported by the node."),
    column(
      "Internal-IP",
      "string",
      "List of addresses reachable to the node. Queried from cloud provider, if available.",
      1,
    ),
    column(
      "External-IP",
      "string",
      "List of addresses reachable to the node. Queried from cloud provider, if available.",
      1,
    ),
    column(
      "OS-Image",
      "string",
      "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
      1,
    ),
    column(
      "Kernel-Version",
      "string",
      "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
      1,
    ),
    column(
      "Container-Runtime",
      "string",
      "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
      1,
    ),
  ],
  row(object, now) {
    const ready = conditionStatus(object, "Ready");
    const statuses = [
      ready === "True" ? "Ready" : ready === undefined || ready === "Unknown" ? "Unknown" : "NotReady",
    ];
    if (ready === "False") statuses[0] = "NotReady";
    if (at(object, "spec.unschedulable") === true) statuses.push("SchedulingDisabled");
    return [
      nameOf(object),
      statuses.join(","),
      nodeRoles(object),
      age(object, now),
      str(at(object, "status.nodeInfo.kubeletVersion")),
      nodeAddress(object, "InternalIP"),
      nodeAddress(object, "ExternalIP"),
      unknownIfEmpty(at(object, "status.nodeInfo.osImage")),
      unknownIfEmpty(at(object, "status.nodeInfo.kernelVersion")),
      unknownIfEmpty(at(object, "status.nodeInfo.containerRuntimeVersion")),
    ];
  },
  patchStrategies: {
    "spec.podCIDRs": { merge: "set" },
    "status.conditions": { mergeKey: "type" },
    "status.addresses": { mergeKey: "type" },
  },
});

// ---- Pod -------------------------------------------------------------------------------

/** DefaultTolerationSeconds admission: tolerate not-ready and unreachable nodes for 300s. */
function addDefaultTolerations(spec: Obj): void {
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations.filter(isRecord) : [];
  for (const key of ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]) {
    const tolerated = tolerations.some(
      (t) =>
        (t.key === key || (t.key === undefined && t.operator === "Exists")) &&
        (t.effect === undefined || t.effect === "" || t.effect === "NoExecute"),
    );
    if (!tolerated)
      tolerations.push({ key, operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 });
  }
  spec.tolerations = tolerations;
}

function sameQuantity(a: unknown, b: unknown): boolean {
  const left = tryParseQuantity(a);
  const right = tryParseQuantity(b);
  return left !== undefined && right !== undefined && left.nanos === right.nanos;
}

/** The pod's QoS class from its containers' cpu/memory requests and limits (GetPodQOS). */
function qosClassOf(spec: Obj): "Guaranteed" | "Burstable" | "BestEffort" {
  const containers = [...containersOf(spec, "containers"), ...containersOf(spec, "initContainers")];
  let any = false;
  let guaranteed = true;
  for (const container of containers) {
    const requests = at(container, "resources.requests");
    const limits = at(container, "resources.limits");
    for (const resource of ["cpu", "memory"]) {
      const request = isRecord(requests) ? requests[resource] : undefined;
      const limit = isRecord(limits) ? limits[resource] : undefined;
      if (request !== undefined || limit !== undefined) any = true;
      if (limit === undefined || (request !== undefined && !sameQuantity(request, limit))) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

function containerDefaults(container: Obj): void {
  setDefault(container, "terminationMessagePath", "/dev/termination-log");
  setDefault(container, "terminationMessagePolicy", "File");
  const image = str(container.image);
  const lastSegment = image.slice(image.lastIndexOf("/") + 1);
  const tagged = lastSegment.includes(":") || image.includes("@");
  setDefault(container, "imagePullPolicy", !tagged || image.endsWith(":latest") ? "Always" : "IfNotPresent");
  setDefault(container, "resources", {});
  // Requests default to the limits where only limits are given.
  const limits = at(container, "resources.limits");
  if (isRecord(limits) && Object.keys(limits).length > 0) {
    const resources = child(container, "resources");
    const requests = child(resources, "requests");
    for (const [resource, value] of Object.entries(limits)) setDefault(requests, resource, value);
  }
  canonicalizeResourceList(container, "resources.requests");
  canonicalizeResourceList(container, "resources.limits");
  const ports = container.ports;
  if (Array.isArray(ports)) for (const port of ports) if (isRecord(port)) setDefault(port, "protocol", "TCP");
}

function containersOf(spec: Obj, key: string): Obj[] {
  const list = spec[key];
  return Array.isArray(list) ? list.filter(isRecord) : [];
}

const MOUNT_PROPAGATIONS = ["Bidirectional", "HostToContainer", "None"] as const;

/** upstream's validateMountPropagation: a known mode, and Bidirectional only in a privileged container. */
function validateMountPropagation(mount: unknown, container: Obj, field: string): FieldCause[] {
  const propagation = at(mount, "mountPropagation");
  if (propagation === undefined || propagation === null) return [];
  const causes: FieldCause[] = [];
  if (!(MOUNT_PROPAGATIONS as readonly unknown[]).includes(propagation))
    causes.push(fieldNotSupported(field, propagation, MOUNT_PROPAGATIONS));
  if (propagation === "Bidirectional" && at(container, "securityContext.privileged") !== true)
    causes.push(
      fieldForbidden(field, "Bidirectional mount propagation is available only to privileged containers"),
    );
  return causes;
}

function validateContainers(
  spec: Obj,
  key: string,
  volumeNames: Set<string>,
  required: boolean,
): FieldCause[] {
  const list = spec[key];
  if (list === undefined || list === null || (Array.isArray(list) && list.length === 0)) {
    return required ? [fieldRequired(`spec.${key}`)] : [];
  }
  if (!Array.isArray(list)) return [fieldInvalid(`spec.${key}`, list, "must be a list")];
  const causes: FieldCause[] = [];
  const names = new Set<string>();
  list.forEach((container: unknown, i) => {
    const field = `spec.${key}[${i}]`;
    if (!isRecord(container)) {
      causes.push(fieldInvalid(field, container, "must be an object"));
      return;
    }
    const name = str(container.name);
    if (name === "") causes.push(fieldRequired(`${field}.name`));
    else
      for (const message of isDNS1123Label(name)) causes.push(fieldInvalid(`${field}.name`, name, message));
    if (names.has(name)) causes.push(fieldDuplicate(`${field}.name`, name));
    names.add(name);
    if (str(container.image).trim() === "") causes.push(fieldRequired(`${field}.image`));
    const mounts = Array.isArray(container.volumeMounts) ? container.volumeMounts : [];
    const mountPaths = new Set<string>();
    mounts.forEach((mount: unknown, j) => {
      const path = `${field}.volumeMounts[${j}]`;
      const volume = str(at(mount, "name"));
      if (volume === "") causes.push(fieldRequired(`${path}.name`));
      else if (!volumeNames.has(volume))
        causes.push({
          reason: "FieldValueNotFound",
          message: `Not found: ${renderValue(volume)}`,
          field: `${path}.name`,
        });
      const mountPath = str(at(mount, "mountPath"));
      if (mountPath === "") causes.push(fieldRequired(`${path}.mountPath`));
      else if (mountPaths.has(mountPath))
        causes.push(fieldInvalid(`${path}.mountPath`, mountPath, "must be unique"));
      mountPaths.add(mountPath);
      causes.push(...validateMountPropagation(mount, container, `${path}.mountPropagation`));
    });
    const devices = Array.isArray(container.volumeDevices) ? container.volumeDevices : [];
    devices.forEach((device: unknown, j) => {
      const path = `${field}.volumeDevices[${j}]`;
      const volume = str(at(device, "name"));
      if (volume === "") causes.push(fieldRequired(`${path}.name`));
      else if (!volumeNames.has(volume))
        causes.push({
          reason: "FieldValueNotFound",
          message: `Not found: ${renderValue(volume)}`,
          field: `${path}.name`,
        });
      if (str(at(device, "devicePath")) === "") causes.push(fieldRequired(`${path}.devicePath`));
    });
  });
  return causes;
}

/**
 * The volume sources in the order upstream's validateVolumeSource checks them: the first one
 * set is the volume's type, every later one is refused under the name upstream reports it by
 * (its own spellings "cephFS" and "downwarAPI" included).
 */
const VOLUME_SOURCE_ORDER: readonly (readonly [key: string, reported: string])[] = [
  ["emptyDir", "emptyDir"],
  ["hostPath", "hostPath"],
  ["gitRepo", "gitRepo"],
  ["gcePersistentDisk", "gcePersistentDisk"],
  ["awsElasticBlockStore", "awsElasticBlockStore"],
  ["secret", "secret"],
  ["nfs", "nfs"],
  ["iscsi", "iscsi"],
  ["glusterfs", "glusterfs"],
  ["flocker", "flocker"],
  ["persistentVolumeClaim", "persistentVolumeClaim"],
  ["rbd", "rbd"],
  ["cinder", "cinder"],
  ["cephfs", "cephFS"],
  ["quobyte", "quobyte"],
  ["downwardAPI", "downwarAPI"],
  ["fc", "fc"],
  ["flexVolume", "flexVolume"],
  ["configMap", "configMap"],
  ["azureFile", "azureFile"],
  ["vsphereVolume", "vsphereVolume"],
  ["photonPersistentDisk", "photonPersistentDisk"],
  ["portworxVolume", "portworxVolume"],
  ["azureDisk", "azureDisk"],
  ["storageos", "storageos"],
  ["projected", "projected"],
  ["scaleIO", "scaleIO"],
  ["csi", "csi"],
  ["ephemeral", "ephemeral"],
  ["image", "image"],
];

function validateVolumes(spec: Obj): { causes: FieldCause[]; names: Set<string> } {
  const causes: FieldCause[] = [];
  const names = new Set<string>();
  const volumes = spec.volumes;
  if (volumes === undefined || volumes === null) return { causes, names };
  if (!Array.isArray(volumes))
    return { causes: [fieldInvalid("spec.volumes", volumes, "must be a list")], names };
  volumes.forEach((volume: unknown, i) => {
    const field = `spec.volumes[${i}]`;
    const name = str(at(volume, "name"));
    if (name === "") causes.push(fieldRequired(`${field}.name`));
    else
      for (const message of isDNS1123Label(name)) causes.push(fieldInvalid(`${field}.name`, name, message));
    if (names.has(name)) causes.push(fieldDuplicate(`${field}.name`, name));
    names.add(name);
    if (!isRecord(volume)) return;
    const sources = VOLUME_SOURCE_ORDER.filter(([key]) => volume[key] !== undefined && volume[key] !== null);
    if (sources.length === 0) causes.push(fieldRequired(field, "must specify a volume type"));
    for (const [, reported] of sources.slice(1))
      causes.push(fieldForbidden(`${field}.${reported}`, "may not specify more than 1 volume type"));
    const claim = volume.persistentVolumeClaim;
    if (isRecord(claim) && str(claim.claimName) === "")
      causes.push(fieldRequired(`${field}.persistentVolumeClaim.claimName`));
    const csi = volume.csi;
    if (isRecord(csi) && str(csi.driver) === "") causes.push(fieldRequired(`${field}.csi.driver`));
  });
  return { causes, names };
}

const POD_UPDATE_FORBIDDEN =
  "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/** The pod spec with the mutable fields blanked, for the update comparison. */
function podSpecSansMutable(spec: unknown): Obj {
  const copy: Obj = isRecord(spec) ? structuredClone(spec) : {};
  for (const key of ["containers", "initContainers"]) {
    for (const container of containersOf(copy, key)) delete container.image;
  }
  delete copy.activeDeadlineSeconds;
  delete copy.tolerations;
  delete copy.terminationGracePeriodSeconds;
  return copy;
}

function toleratesOld(object: Obj, old: Obj): boolean {
  const now = at(object, "spec.tolerations");
  const before = at(old, "spec.tolerations");
  const newList = Array.isArray(now) ? now : [];
  const oldList = Array.isArray(before) ? before : [];
  return oldList.every((toleration) => newList.some((candidate) => jsonEqual(candidate, toleration)));
}

function podStatusReason(object: Obj): string {
  let reason = str(at(object, "status.reason")) || str(at(object, "status.phase"));
  const statuses = at(object, "status.containerStatuses");
  if (Array.isArray(statuses)) {
    for (const status of statuses) {
      const waiting = str(at(status, "state.waiting.reason"));
      const terminated = str(at(status, "state.terminated.reason"));
      if (waiting !== "") reason = waiting;
      else if (terminated !== "") reason = terminated;
    }
  }
  const phase = str(at(object, "status.phase"));
  if (metaOf(object).deletionTimestamp !== undefined && phase !== "Succeeded" && phase !== "Failed") {
    reason = at(object, "status.reason") === "NodeLost" ? "Unknown" : "Terminating";
  }
  return reason;
}

function podReady(object: Obj): string {
  const containers = containersOf(isRecord(object.spec) ? object.spec : {}, "containers");
  const statuses = at(object, "status.containerStatuses");
  const ready = Array.isArray(statuses)
    ? statuses.filter((status) => at(status, "ready") === true).length
    : 0;
  return `${ready}/${containers.length}`;
}

function podRestarts(object: Obj): number {
  const statuses = at(object, "status.containerStatuses");
  if (!Array.isArray(statuses)) return 0;
  return statuses.reduce((sum: number, status) => {
    const count = at(status, "restartCount");
    return sum + (typeof count === "number" ? count : 0);
  }, 0);
}

function readinessGates(object: Obj): string {
  const gates = at(object, "spec.readinessGates");
  if (!Array.isArray(gates) || gates.length === 0) return "<none>";
  const trueCount = gates.filter(
    (gate) => conditionStatus(object, str(at(gate, "conditionType"))) === "True",
  ).length;
  return `${trueCount}/${gates.length}`;
}

/** Graceful deletion as the pod strategy decides it: unscheduled or finished pods go at once. */
function podGracePeriod(object: KubeObject, requested: number | undefined): number {
  const phase = str(at(object, "status.phase"));
  if (str(at(object, "spec.nodeName")) === "" || phase === "Succeeded" || phase === "Failed") return 0;
  if (requested !== undefined) return Math.max(0, requested);
  const configured = at(object, "spec.terminationGracePeriodSeconds");
  return typeof configured === "number" ? Math.max(0, configured) : 30;
}

const CONTAINER_LIST_STRATEGIES = (prefix: string) => ({
  [prefix]: { mergeKey: "name" },
  [`${prefix}[].env`]: { mergeKey: "name" },
  [`${prefix}[].ports`]: { mergeKey: "containerPort" },
  [`${prefix}[].volumeMounts`]: { mergeKey: "mountPath" },
  [`${prefix}[].volumeDevices`]: { mergeKey: "devicePath" },
});

export const pods: ResourceDef = defineResource({
  group: "",
  version: "v1",
  resource: "pods",
  // Upstream: pods/status never changes ownerReferences (old kubelets corrupted them).
  statusWritableMetadata: ["labels", "annotations", "finalizers"],
  kind: "Pod",
  namespaced: true,
  shortNames: ["po"],
  categories: ["all"],
  subresources: ["status", "binding", "log", "exec"],
  returnDeletedObject: true,
  deleteGracePeriod: podGracePeriod,
  defaults(object) {
    const spec = child(object, "spec");
    setDefault(spec, "restartPolicy", "Always");
    setDefault(spec, "terminationGracePeriodSeconds", 30);
    setDefault(spec, "dnsPolicy", "ClusterFirst");
    setDefault(spec, "securityContext", {});
    setDefault(spec, "schedulerName", "default-scheduler");
    setDefault(spec, "enableServiceLinks", true);
    setDefault(spec, "serviceAccountName", str(spec.serviceAccount) || "default");
    setDefault(spec, "serviceAccount", spec.serviceAccountName);
    setDefault(spec, "priority", 0);
    setDefault(spec, "preemptionPolicy", "PreemptLowerPriority");
    for (const key of ["containers", "initContainers"])
      for (const container of containersOf(spec, key)) containerDefaults(container);
    addDefaultTolerations(spec);
    const status = child(object, "status");
    setDefault(status, "phase", "Pending");
    setDefault(status, "qosClass", qosClassOf(spec));
  },
  validate(object) {
    const spec = isRecord(object.spec) ? object.spec : {};
    const volumes = validateVolumes(spec);
    const causes: FieldCause[] = [
      ...volumes.causes,
      ...validateContainers(spec, "containers", volumes.names, true),
      ...validateContainers(spec, "initContainers", volumes.names, false),
      ...oneOf("spec.restartPolicy", spec.restartPolicy, ["Always", "Never", "OnFailure"]),
      ...oneOf("spec.dnsPolicy", spec.dnsPolicy, [
        "ClusterFirst",
        "ClusterFirstWithHostNet",
        "Default",
        "None",
      ]),
    ];
    const grace = spec.terminationGracePeriodSeconds;
    if (grace !== undefined && typeof grace !== "number") {
      causes.push(fieldInvalid("spec.terminationGracePeriodSeconds", grace, "must be an integer"));
    }
    return causes;
  },
  validateUpdate(object, old) {
    const causes: FieldCause[] = [];
    if (
      !jsonEqual(podSpecSansMutable(object.spec), podSpecSansMutable(old.spec)) ||
      !toleratesOld(object, old)
    ) {
      causes.push(fieldForbidden("spec", POD_UPDATE_FORBIDDEN));
    }
    return causes;
  },
  validateStatus(object, old) {
    const causes: FieldCause[] = [];
    const phase = at(object, "status.phase");
    if (phase !== undefined)
      causes.push(...oneOf("status.phase", phase, ["Failed", "Pending", "Running", "Succeeded", "Unknown"]));
    const oldNode = str(at(old, "spec.nodeName"));
    if (oldNode !== "" && str(at(object, "spec.nodeName")) !== oldNode) {
      causes.push(fieldForbidden("spec.nodeName", "cannot be updated"));
    }
    return causes;
  },
  specChanged: () => false,
  fieldSelectors: {
    "spec.nodeName": (object) => str(at(object, "spec.nodeName")),
    "spec.restartPolicy": (object) => str(at(object, "spec.restartPolicy")),
    "spec.schedulerName": (object) => str(at(object, "spec.schedulerName")),
    "spec.serviceAccountName": (object) => str(at(object, "spec.serviceAccountName")),
    "spec.hostNetwork": (object) => String(at(object, "spec.hostNetwork") === true),
    "status.phase": (object) => str(at(object, "status.phase")),
    "status.podIP": (object) => str(at(object, "status.podIP")),
    "status.nominatedNodeName": (object) => str(at(object, "status.nominatedNodeName")),
  },
  columns: [
    NAME_COLUMN,
    column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    column("Status", "string", "The aggregate status of the containers in this pod."),
    column(
      "Restarts",
      "string",
      "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE_COLUMN,
    column(
      "IP",
      "string",
      "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
      1,
    ),
    column(
      "Node",
      "string",
      "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.",
      1,
    ),
    column(
      "Nominated Node",
      "string",
      "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
      1,
    ),
    column(
      "Readiness Gates",
      "string",
      'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
      1,
    ),
  ],
  row(object, now) {
    return [
      nameOf(object),
      podReady(object),
      podStatusReason(object),
      String(podRestarts(object)),
      age(object, now),
      orNone(str(at(object, "status.podIP"))),
      orNone(str(at(object, "spec.nodeName"))),
      orNone(str(at(object, "status.nominatedNodeName"))),
      readinessGates(object),
    ];
  },
  patchStrategies: {
    ...CONTAINER_LIST_STRATEGIES("spec.containers"),
    ...CONTAINER_LIST_STRATEGIES("spec.initContainers"),
    ...CONTAINER_LIST_STRATEGIES("spec.ephemeralContainers"),
    "spec.volumes": { mergeKey: "name" },
    "spec.imagePullSecrets": { mergeKey: "name" },
    "spec.hostAliases": { mergeKey: "ip" },
    "spec.topologySpreadConstraints": { mergeKey: "topologyKey" },
    "spec.schedulingGates": { mergeKey: "name" },
    "spec.resourceClaims": { mergeKey: "name" },
    "status.conditions": { mergeKey: "type" },
    "status.podIPs": { mergeKey: "ip" },
    "status.hostIPs": { mergeKey: "ip" },
  },
});

export const workloadResources: readonly ResourceDef[] = Object.freeze([namespaces, nodes, pods]);
