// apps/v1 deployments, daemonsets, statefulsets and replicasets: stored and validated as
// kube-apiserver does (defaults, selector rules, the pod template validated as a pod), so driver
// manifests apply cleanly; csikit controllers' workload loops run them. And controllerrevisions,
// the history the StatefulSet controller keeps (what `kubectl rollout history/undo` read).

import { jsonEqual } from "../../base/index.ts";
import { fieldForbidden, fieldInvalid, fieldRequired, goRendered } from "../../api/index.ts";
import type { FieldCause, KubeObject, ResourceDef } from "../rest/resource.ts";
import {
  AGE_COLUMN,
  NAME_COLUMN,
  age,
  at,
  child,
  column,
  defineResource,
  isRecord,
  nameOf,
  oneOf,
  setDefault,
  str,
} from "./common.ts";
import type { Obj } from "./common.ts";
import { pods } from "./workloads.ts";

/** The pod a template describes, to reuse the Pod kind's defaulting and validation. */
function templatePod(template: Obj): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "template", namespace: "template" },
    spec: structuredClone(isRecord(template.spec) ? template.spec : {}),
  };
}

function defaultTemplate(spec: Obj): void {
  const template = child(spec, "template");
  const pod = templatePod(template);
  pods.applyDefaults(pod);
  template.spec = pod.spec;
}

function matchesSelector(labels: Obj, selector: Obj): boolean {
  const matchLabels = isRecord(selector.matchLabels) ? selector.matchLabels : {};
  for (const [key, value] of Object.entries(matchLabels)) if (labels[key] !== value) return false;
  const expressions = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  for (const expression of expressions) {
    if (!isRecord(expression)) return false;
    const key = str(expression.key);
    const values = Array.isArray(expression.values) ? expression.values.map(String) : [];
    const has = Object.hasOwn(labels, key);
    switch (expression.operator) {
      case "In":
        if (!has || !values.includes(str(labels[key]))) return false;
        break;
      case "NotIn":
        if (has && values.includes(str(labels[key]))) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** Go's rendering of a map[string]string, as upstream's messages print template labels. */
function goStringMap(map: Obj): string {
  const entries = Object.keys(map)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${JSON.stringify(str(map[key]))}`);
  return `map[string]string{${entries.join(", ")}}`;
}

interface WorkloadRules {
  /** The kind's word in upstream's empty-selector message. */
  selectorNoun: string;
  withReplicas: boolean;
  /**
   * Whether the template's pod spec is validated as a pod's. Upstream validates it for
   * Deployments, DaemonSets and ReplicaSets; for StatefulSets it does not (only the template's
   * restartPolicy and activeDeadlineSeconds), because their containers mount volumes that only
   * the volumeClaimTemplates name.
   */
  validatePodSpec: boolean;
}

/** Selector, template and replica rules shared by the four kinds. */
function validateWorkload(object: Obj, rules: WorkloadRules): FieldCause[] {
  const causes: FieldCause[] = [];
  const spec = isRecord(object.spec) ? object.spec : {};
  const selector = spec.selector;
  if (!isRecord(selector)) {
    causes.push(fieldRequired("spec.selector"));
  } else {
    const empty =
      (!isRecord(selector.matchLabels) || Object.keys(selector.matchLabels).length === 0) &&
      (!Array.isArray(selector.matchExpressions) || selector.matchExpressions.length === 0);
    if (empty)
      causes.push(
        fieldInvalid("spec.selector", selector, `empty selector is invalid for ${rules.selectorNoun}`),
      );
  }
  const template = isRecord(spec.template) ? spec.template : undefined;
  if (template === undefined) {
    causes.push(fieldRequired("spec.template"));
    return causes;
  }
  const labels = isRecord(at(template, "metadata.labels")) ? (at(template, "metadata.labels") as Obj) : {};
  if (isRecord(selector) && !matchesSelector(labels, selector)) {
    causes.push(
      fieldInvalid(
        "spec.template.metadata.labels",
        goRendered(goStringMap(labels)),
        "`selector` does not match template `labels`",
      ),
    );
  }
  if (rules.validatePodSpec) {
    for (const cause of pods.validateCreate(templatePod(template))) {
      if (cause.field.startsWith("spec")) causes.push({ ...cause, field: `spec.template.${cause.field}` });
    }
  }
  causes.push(...oneOf("spec.template.spec.restartPolicy", at(template, "spec.restartPolicy"), ["Always"]));
  if (rules.withReplicas) {
    const replicas = spec.replicas;
    if (
      replicas !== undefined &&
      (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0)
    )
      causes.push(fieldInvalid("spec.replicas", replicas, "must be greater than or equal to 0"));
  }
  return causes;
}

/** What upstream checks of a StatefulSet's pod template besides its labels and restartPolicy. */
function statefulSetTemplateRules(object: Obj): FieldCause[] {
  const deadline = at(object, "spec.template.spec.activeDeadlineSeconds");
  if (deadline === undefined || deadline === null) return [];
  return [
    fieldForbidden(
      "spec.template.spec.activeDeadlineSeconds",
      "activeDeadlineSeconds in StatefulSet is not Supported",
    ),
  ];
}

function podManagementPolicyRule(policy: unknown): FieldCause[] {
  if (policy === "OrderedReady" || policy === "Parallel") return [];
  return [fieldInvalid("spec.podManagementPolicy", policy ?? "", "must be 'OrderedReady' or 'Parallel'")];
}

function selectorImmutable(object: Obj, old: Obj): FieldCause[] {
  const selector = at(object, "spec.selector");
  return jsonEqual(selector, at(old, "spec.selector"))
    ? []
    : [fieldInvalid("spec.selector", selector, "field is immutable")];
}

function num(value: unknown): number {
  return typeof value === "number" ? value : 0;
}

const WORKLOAD_STRATEGIES = {
  "spec.template.spec.containers": { mergeKey: "name" },
  "spec.template.spec.initContainers": { mergeKey: "name" },
  "spec.template.spec.volumes": { mergeKey: "name" },
  "spec.template.spec.containers[].env": { mergeKey: "name" },
  "spec.template.spec.containers[].volumeMounts": { mergeKey: "mountPath" },
  "spec.template.spec.containers[].ports": { mergeKey: "containerPort" },
} as const;

export const deployments: ResourceDef = defineResource({
  group: "apps",
  version: "v1",
  resource: "deployments",
  kind: "Deployment",
  namespaced: true,
  shortNames: ["deploy"],
  categories: ["all"],
  subresources: ["status", "scale"],
  tracksGeneration: true,
  defaults(object) {
    const spec = child(object, "spec");
    setDefault(spec, "replicas", 1);
    setDefault(spec, "revisionHistoryLimit", 10);
    setDefault(spec, "progressDeadlineSeconds", 600);
    const strategy = child(spec, "strategy");
    setDefault(strategy, "type", "RollingUpdate");
    if (strategy.type === "RollingUpdate") {
      const rolling = child(strategy, "rollingUpdate");
      setDefault(rolling, "maxUnavailable", "25%");
      setDefault(rolling, "maxSurge", "25%");
    }
    defaultTemplate(spec);
  },
  validate: (object) => [
    ...validateWorkload(object, { selectorNoun: "deployment", withReplicas: true, validatePodSpec: true }),
    ...oneOf("spec.strategy.type", at(object, "spec.strategy.type"), ["Recreate", "RollingUpdate"]),
  ],
  validateUpdate: selectorImmutable,
  columns: [
    NAME_COLUMN,
    column("Ready", "string", "Number of the pod with ready state"),
    column(
      "Up-to-date",
      "string",
      "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    column(
      "Available",
      "string",
      "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE_COLUMN,
  ],
  row: (object, now) => [
    nameOf(object),
    `${num(at(object, "status.readyReplicas"))}/${num(at(object, "spec.replicas"))}`,
    num(at(object, "status.updatedReplicas")),
    num(at(object, "status.availableReplicas")),
    age(object, now),
  ],
  patchStrategies: WORKLOAD_STRATEGIES,
});

export const replicaSets: ResourceDef = defineResource({
  group: "apps",
  version: "v1",
  resource: "replicasets",
  kind: "ReplicaSet",
  namespaced: true,
  shortNames: ["rs"],
  categories: ["all"],
  subresources: ["status", "scale"],
  tracksGeneration: true,
  defaults(object) {
    const spec = child(object, "spec");
    setDefault(spec, "replicas", 1);
    defaultTemplate(spec);
  },
  // Upstream's ReplicaSet message says "deployment" too.
  validate: (object) =>
    validateWorkload(object, { selectorNoun: "deployment", withReplicas: true, validatePodSpec: true }),
  validateUpdate: selectorImmutable,
  columns: [
    NAME_COLUMN,
    column("Desired", "integer", "Replicas is the number of desired pods."),
    column("Current", "integer", "Replicas is the most recently observed number of replicas."),
    column("Ready", "integer", "The number of ready replicas for this replica set."),
    AGE_COLUMN,
  ],
  row: (object, now) => [
    nameOf(object),
    num(at(object, "spec.replicas")),
    num(at(object, "status.replicas")),
    num(at(object, "status.readyReplicas")),
    age(object, now),
  ],
  patchStrategies: WORKLOAD_STRATEGIES,
});

export const statefulSets: ResourceDef = defineResource({
  group: "apps",
  version: "v1",
  resource: "statefulsets",
  kind: "StatefulSet",
  namespaced: true,
  shortNames: ["sts"],
  categories: ["all"],
  subresources: ["status", "scale"],
  tracksGeneration: true,
  defaults(object) {
    const spec = child(object, "spec");
    setDefault(spec, "replicas", 1);
    setDefault(spec, "podManagementPolicy", "OrderedReady");
    setDefault(spec, "revisionHistoryLimit", 10);
    const strategy = child(spec, "updateStrategy");
    setDefault(strategy, "type", "RollingUpdate");
    if (strategy.type === "RollingUpdate") setDefault(child(strategy, "rollingUpdate"), "partition", 0);
    const retention = child(spec, "persistentVolumeClaimRetentionPolicy");
    setDefault(retention, "whenDeleted", "Retain");
    setDefault(retention, "whenScaled", "Retain");
    defaultTemplate(spec);
  },
  validate: (object) => [
    ...validateWorkload(object, { selectorNoun: "statefulset", withReplicas: true, validatePodSpec: false }),
    ...statefulSetTemplateRules(object),
    ...podManagementPolicyRule(at(object, "spec.podManagementPolicy")),
    ...oneOf("spec.updateStrategy.type", at(object, "spec.updateStrategy.type"), [
      "OnDelete",
      "RollingUpdate",
    ]),
  ],
  validateUpdate(object, old) {
    const causes = selectorImmutable(object, old);
    for (const field of ["serviceName", "volumeClaimTemplates", "podManagementPolicy"]) {
      if (!jsonEqual(at(object, `spec.${field}`), at(old, `spec.${field}`))) {
        causes.push({
          reason: "FieldValueForbidden",
          message:
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
          field: "spec",
        });
        break;
      }
    }
    return causes;
  },
  columns: [NAME_COLUMN, column("Ready", "string", "Number of the pod with ready state"), AGE_COLUMN],
  row: (object, now) => [
    nameOf(object),
    `${num(at(object, "status.readyReplicas"))}/${num(at(object, "spec.replicas"))}`,
    age(object, now),
  ],
  patchStrategies: WORKLOAD_STRATEGIES,
});

export const daemonSets: ResourceDef = defineResource({
  group: "apps",
  version: "v1",
  resource: "daemonsets",
  kind: "DaemonSet",
  namespaced: true,
  shortNames: ["ds"],
  categories: ["all"],
  subresources: ["status"],
  tracksGeneration: true,
  defaults(object) {
    const spec = child(object, "spec");
    setDefault(spec, "revisionHistoryLimit", 10);
    const strategy = child(spec, "updateStrategy");
    setDefault(strategy, "type", "RollingUpdate");
    if (strategy.type === "RollingUpdate") {
      const rolling = child(strategy, "rollingUpdate");
      setDefault(rolling, "maxUnavailable", 1);
      setDefault(rolling, "maxSurge", 0);
    }
    defaultTemplate(spec);
  },
  validate: (object) => [
    ...validateWorkload(object, { selectorNoun: "daemonset", withReplicas: false, validatePodSpec: true }),
    ...oneOf("spec.updateStrategy.type", at(object, "spec.updateStrategy.type"), [
      "OnDelete",
      "RollingUpdate",
    ]),
  ],
  validateUpdate: selectorImmutable,
  columns: [
    NAME_COLUMN,
    column("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
    column("Current", "integer", "The number of nodes that are running at least 1 daemon pod."),
    column(
      "Ready",
      "integer",
      "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
    ),
    column("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    column(
      "Available",
      "integer",
      "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    column(
      "Node Selector",
      "string",
      "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE_COLUMN,
  ],
  row: (object, now) => {
    const selector = at(object, "spec.template.spec.nodeSelector");
    return [
      nameOf(object),
      num(at(object, "status.desiredNumberScheduled")),
      num(at(object, "status.currentNumberScheduled")),
      num(at(object, "status.numberReady")),
      num(at(object, "status.updatedNumberScheduled")),
      num(at(object, "status.numberAvailable")),
      isRecord(selector) && Object.keys(selector).length > 0
        ? Object.entries(selector)
            .map(([k, v]) => `${k}=${str(v)}`)
            .join(",")
        : "<none>",
      age(object, now),
    ];
  },
  patchStrategies: WORKLOAD_STRATEGIES,
});

/** "statefulset.apps/web": the controller column upstream prints for a revision. */
function revisionController(object: Obj): string {
  const refs = at(object, "metadata.ownerReferences");
  const list: unknown[] = Array.isArray(refs) ? refs : [];
  const owner = list.find((ref) => isRecord(ref) && ref.controller === true);
  if (!isRecord(owner)) return "<none>";
  const group = str(owner.apiVersion).includes("/") ? str(owner.apiVersion).split("/")[0] : "";
  return `${str(owner.kind).toLowerCase()}${group ? `.${group}` : ""}/${str(owner.name)}`;
}

export const controllerRevisions: ResourceDef = defineResource({
  group: "apps",
  version: "v1",
  resource: "controllerrevisions",
  kind: "ControllerRevision",
  namespaced: true,
  validate(object) {
    const revision = object.revision ?? 0;
    return typeof revision === "number" && Number.isInteger(revision) && revision >= 0
      ? []
      : [fieldInvalid("revision", revision ?? 0, "must be greater than or equal to 0")];
  },
  validateUpdate(object, old) {
    return jsonEqual(object.data, old.data) ? [] : [fieldInvalid("data", object.data, "field is immutable")];
  },
  columns: [
    NAME_COLUMN,
    column("Controller", "string", "Controller of the object"),
    column("Revision", "integer", "Revision indicates the revision of the state represented by Data."),
    AGE_COLUMN,
  ],
  row: (object, now) => [nameOf(object), revisionController(object), num(object.revision), age(object, now)],
});

export const appsResources: readonly ResourceDef[] = Object.freeze([
  deployments,
  daemonSets,
  statefulSets,
  replicaSets,
  controllerRevisions,
]);
