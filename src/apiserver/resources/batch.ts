// batch/v1 jobs and cronjobs, stored, defaulted and validated as kube-apiserver does: a Job
// without spec.manualSelector gets a selector on its own uid and the controller-uid/job-name
// labels on its template (the job strategy's generateSelector), a template restartPolicy of
// OnFailure or Never, and kubectl's columns (STATUS COMPLETIONS DURATION AGE). The Job
// controller lives in csikit controllers; CronJobs are served but nothing runs them.

import { fieldInvalid, fieldRequired, humanDuration, WORKLOAD_NAMES } from "../../api/index.ts";
import type { FieldCause, ResourceDef } from "../rest/resource.ts";
import {
  AGE_COLUMN,
  NAME_COLUMN,
  age,
  at,
  child,
  column,
  defineResource,
  immutable,
  isRecord,
  nameOf,
  oneOf,
  setDefault,
  str,
} from "./common.ts";
import type { Obj } from "./common.ts";
import { pods } from "./workloads.ts";

const MAX_INT32 = 2147483647;

function templatePod(template: Obj): Obj {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "template", namespace: "template" },
    spec: structuredClone(isRecord(template.spec) ? template.spec : {}),
  };
}

/** SetDefaults_Job plus the job strategy's PrepareForCreate (selector from the uid). */
function defaultJobSpec(spec: Obj, meta: Obj): void {
  if (spec.completions === undefined && spec.parallelism === undefined) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  setDefault(spec, "parallelism", 1);
  setDefault(spec, "backoffLimit", spec.backoffLimitPerIndex !== undefined ? MAX_INT32 : 6);
  setDefault(spec, "completionMode", "NonIndexed");
  setDefault(spec, "suspend", false);
  if (spec.podFailurePolicy === undefined) setDefault(spec, "podReplacementPolicy", "TerminatingOrFailed");
  else setDefault(spec, "podReplacementPolicy", "Failed");
  const template = child(spec, "template");
  const pod = templatePod(template);
  pods.applyDefaults(pod);
  template.spec = pod.spec;
  // generateSelector: only for a new object (uid just assigned, no selector chosen yet).
  const uid = str(meta.uid);
  if (spec.manualSelector !== true && spec.selector === undefined && uid !== "") {
    const labels = child(child(template, "metadata"), "labels");
    const name = str(meta.name);
    labels[WORKLOAD_NAMES.controllerUidLabel] = uid;
    labels[WORKLOAD_NAMES.jobNameLabel] = name;
    labels[WORKLOAD_NAMES.legacyControllerUidLabel] = uid;
    labels[WORKLOAD_NAMES.legacyJobNameLabel] = name;
    spec.selector = { matchLabels: { [WORKLOAD_NAMES.controllerUidLabel]: uid } };
  }
}

function nonNegative(spec: Obj, field: string, prefix: string): FieldCause[] {
  const value = spec[field];
  if (value === undefined || value === null) return [];
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0)
    return [fieldInvalid(`${prefix}.${field}`, value, "must be greater than or equal to 0")];
  return [];
}

function selectorMatchesLabels(selector: Obj, labels: Obj): boolean {
  const matchLabels = isRecord(selector.matchLabels) ? selector.matchLabels : {};
  return Object.entries(matchLabels).every(([key, value]) => labels[key] === value);
}

/** ValidateJobSpec (the parts a user meets), under `prefix` ("spec" or "spec.jobTemplate.spec"). */
function validateJobSpec(spec: Obj, prefix: string): FieldCause[] {
  const causes: FieldCause[] = [];
  for (const field of ["parallelism", "completions", "backoffLimit"])
    causes.push(...nonNegative(spec, field, prefix));
  const deadline = spec.activeDeadlineSeconds;
  if (deadline !== undefined && (typeof deadline !== "number" || deadline <= 0))
    causes.push(fieldInvalid(`${prefix}.activeDeadlineSeconds`, deadline, "must be greater than 0"));
  causes.push(...oneOf(`${prefix}.completionMode`, spec.completionMode, ["NonIndexed", "Indexed"]));
  if (spec.completionMode === "Indexed" && spec.completions === undefined)
    causes.push(fieldRequired(`${prefix}.completions`, "when completion mode is Indexed"));
  const template = isRecord(spec.template) ? spec.template : undefined;
  if (template === undefined) {
    causes.push(fieldRequired(`${prefix}.template`));
    return causes;
  }
  causes.push(
    ...oneOf(`${prefix}.template.spec.restartPolicy`, at(template, "spec.restartPolicy"), [
      "OnFailure",
      "Never",
    ]),
  );
  for (const cause of pods.validateCreate(templatePod(template))) {
    if (cause.field.startsWith("spec") && cause.field !== "spec.restartPolicy")
      causes.push({ ...cause, field: `${prefix}.template.${cause.field}` });
  }
  return causes;
}

function validateJob(object: Obj): FieldCause[] {
  const spec = isRecord(object.spec) ? object.spec : {};
  const causes = validateJobSpec(spec, "spec");
  const selector = spec.selector;
  if (!isRecord(selector)) {
    causes.push(fieldRequired("spec.selector"));
  } else {
    const labels = at(spec, "template.metadata.labels");
    if (!selectorMatchesLabels(selector, isRecord(labels) ? labels : {}))
      causes.push(
        fieldInvalid(
          "spec.template.metadata.labels",
          labels ?? {},
          "`selector` does not match template `labels`",
        ),
      );
  }
  return causes;
}

/** A user-chosen selector without manualSelector: upstream refuses it on create. */
function validateJobCreate(object: Obj): FieldCause[] {
  const spec = isRecord(object.spec) ? object.spec : {};
  if (spec.manualSelector === true) return [];
  const uid = str(at(object, "metadata.uid"));
  const matchLabels = at(spec, "selector.matchLabels");
  const generated =
    isRecord(matchLabels) &&
    Object.keys(matchLabels).length === 1 &&
    matchLabels[WORKLOAD_NAMES.controllerUidLabel] === uid;
  return generated
    ? []
    : [fieldInvalid("spec.selector", spec.selector ?? null, "`selector` will be auto-generated")];
}

function validateJobUpdate(object: Obj, old: Obj): FieldCause[] {
  return [
    ...immutable("spec.selector", at(object, "spec.selector"), at(old, "spec.selector")),
    ...immutable("spec.completions", at(object, "spec.completions"), at(old, "spec.completions")),
    ...immutable("spec.completionMode", at(object, "spec.completionMode"), at(old, "spec.completionMode")),
    ...immutable("spec.template", at(object, "spec.template"), at(old, "spec.template")),
  ];
}

function num(value: unknown): number {
  return typeof value === "number" ? value : 0;
}

function conditionTrue(object: Obj, type: string): boolean {
  const conditions = at(object, "status.conditions");
  return (
    Array.isArray(conditions) && conditions.some((c) => isRecord(c) && c.type === type && c.status === "True")
  );
}

/** printJob's STATUS cell. */
export function jobStatusCell(object: Obj): string {
  if (conditionTrue(object, "Complete")) return "Complete";
  if (conditionTrue(object, "Failed")) return "Failed";
  if (at(object, "metadata.deletionTimestamp") !== undefined) return "Terminating";
  if (conditionTrue(object, "Suspended")) return "Suspended";
  if (conditionTrue(object, "FailureTarget")) return "FailureTarget";
  if (conditionTrue(object, "SuccessCriteriaMet")) return "SuccessCriteriaMet";
  return "Running";
}

/** printJob's COMPLETIONS cell. */
function completionsCell(object: Obj): string {
  const succeeded = num(at(object, "status.succeeded"));
  const completions = at(object, "spec.completions");
  const parallelism = at(object, "spec.parallelism");
  if (typeof completions === "number") return `${succeeded}/${completions}`;
  if (typeof parallelism === "number" && parallelism > 1) return `${succeeded}/1 of ${parallelism}`;
  return `${succeeded}/1`;
}

function durationCell(object: Obj, now: number): string {
  const start = Date.parse(str(at(object, "status.startTime")));
  if (Number.isNaN(start)) return "";
  const end = Date.parse(str(at(object, "status.completionTime")));
  return humanDuration((Number.isNaN(end) ? now : end) - start);
}

function containerCells(podSpec: unknown): [string, string] {
  const containers = isRecord(podSpec) && Array.isArray(podSpec.containers) ? podSpec.containers : [];
  const names = containers.map((c) => (isRecord(c) ? str(c.name) : ""));
  const images = containers.map((c) => (isRecord(c) ? str(c.image) : ""));
  return [names.join(","), images.join(",")];
}

/** metav1.FormatLabelSelector of matchLabels/matchExpressions, as the printers show it. */
function selectorCell(selector: unknown): string {
  if (!isRecord(selector)) return "<none>";
  const parts: string[] = [];
  const labels = isRecord(selector.matchLabels) ? selector.matchLabels : {};
  for (const key of Object.keys(labels).sort()) parts.push(`${key}=${str(labels[key])}`);
  const expressions = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  for (const e of expressions) {
    if (!isRecord(e)) continue;
    const values = Array.isArray(e.values) ? e.values.map(String).sort().join(",") : "";
    const op = str(e.operator);
    if (op === "Exists") parts.push(str(e.key));
    else if (op === "DoesNotExist") parts.push(`!${str(e.key)}`);
    else parts.push(`${str(e.key)} ${op.toLowerCase()} (${values})`);
  }
  return parts.length === 0 ? "<none>" : parts.join(",");
}

const CONTAINERS_COLUMN = column("Containers", "string", "Names of each container in the template.", 1);
const IMAGES_COLUMN = column("Images", "string", "Images referenced by each container in the template.", 1);

const TEMPLATE_STRATEGIES = {
  "spec.template.spec.containers": { mergeKey: "name" },
  "spec.template.spec.initContainers": { mergeKey: "name" },
  "spec.template.spec.volumes": { mergeKey: "name" },
  "spec.template.spec.containers[].env": { mergeKey: "name" },
  "spec.template.spec.containers[].volumeMounts": { mergeKey: "mountPath" },
} as const;

export const jobs: ResourceDef = defineResource({
  group: "batch",
  version: "v1",
  resource: "jobs",
  kind: "Job",
  namespaced: true,
  categories: ["all"],
  subresources: ["status"],
  tracksGeneration: true,
  defaults(object) {
    defaultJobSpec(child(object, "spec"), child(object, "metadata"));
  },
  validate: validateJob,
  validateCreate: validateJobCreate,
  validateUpdate: validateJobUpdate,
  columns: [
    NAME_COLUMN,
    column("Status", "string", "Status of the job."),
    column(
      "Completions",
      "string",
      "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
    ),
    column("Duration", "string", "Time required to complete the job."),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    column(
      "Selector",
      "string",
      "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
      1,
    ),
  ],
  row: (object, now) => [
    nameOf(object),
    jobStatusCell(object),
    completionsCell(object),
    durationCell(object, now),
    age(object, now),
    ...containerCells(at(object, "spec.template.spec")),
    selectorCell(at(object, "spec.selector")),
  ],
  patchStrategies: TEMPLATE_STRATEGIES,
});

export const cronJobs: ResourceDef = defineResource({
  group: "batch",
  version: "v1",
  resource: "cronjobs",
  kind: "CronJob",
  namespaced: true,
  shortNames: ["cj"],
  categories: ["all"],
  subresources: ["status"],
  tracksGeneration: true,
  defaults(object) {
    const spec = child(object, "spec");
    setDefault(spec, "concurrencyPolicy", "Allow");
    setDefault(spec, "suspend", false);
    setDefault(spec, "successfulJobsHistoryLimit", 3);
    setDefault(spec, "failedJobsHistoryLimit", 1);
    const jobSpec = child(child(spec, "jobTemplate"), "spec");
    // The template's Job is defaulted as a Job, minus the selector (chosen per Job at its creation).
    defaultJobSpec(jobSpec, {});
  },
  validate(object) {
    const spec = isRecord(object.spec) ? object.spec : {};
    const causes: FieldCause[] = [];
    if (str(spec.schedule) === "") causes.push(fieldRequired("spec.schedule"));
    causes.push(...oneOf("spec.concurrencyPolicy", spec.concurrencyPolicy, ["Allow", "Forbid", "Replace"]));
    const jobSpec = at(spec, "jobTemplate.spec");
    causes.push(...validateJobSpec(isRecord(jobSpec) ? jobSpec : {}, "spec.jobTemplate.spec"));
    return causes;
  },
  columns: [
    NAME_COLUMN,
    column("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    column(
      "Timezone",
      "string",
      "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
    ),
    column(
      "Suspend",
      "boolean",
      "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
    ),
    column("Active", "integer", "A list of pointers to currently running jobs."),
    column(
      "Last Schedule",
      "string",
      "Information when was the last time the job was successfully scheduled.",
    ),
    AGE_COLUMN,
  ],
  row: (object, now) => {
    const last = Date.parse(str(at(object, "status.lastScheduleTime")));
    const active = at(object, "status.active");
    return [
      nameOf(object),
      str(at(object, "spec.schedule")),
      str(at(object, "spec.timeZone")) || "<none>",
      at(object, "spec.suspend") === true ? "True" : "False",
      Array.isArray(active) ? active.length : 0,
      Number.isNaN(last) ? "<none>" : humanDuration(now - last),
      age(object, now),
    ];
  },
  patchStrategies: {
    "spec.jobTemplate.spec.template.spec.containers": { mergeKey: "name" },
    "spec.jobTemplate.spec.template.spec.volumes": { mergeKey: "name" },
  },
});

export const batchResources: readonly ResourceDef[] = Object.freeze([jobs, cronJobs]);
