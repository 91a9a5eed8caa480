// Events in both shapes: core/v1 events and events.k8s.io/v1 events, with upstream's field
// selectors and the event printer (LAST SEEN TYPE REASON OBJECT MESSAGE). As upstream, they are
// ONE stored object: core/v1 is the storage shape, and events.k8s.io/v1 declares
// `storage` (ResourceDef) so the REST layer keeps its objects under the core key and converts
// them on the way in and out (pkg/apis/events/v1 conversion). Each API validates, selects and
// prints its own shape.

import { ageSince, fieldInvalid, fieldRequired, fieldTooLong } from "../../api/index.ts";
import type { FieldCause, KubeObject, ResourceDef } from "../rest/resource.ts";
import { NAME_COLUMN, at, column, defineResource, isRecord, metaOf, nameOf, str } from "./common.ts";
import type { Obj } from "./common.ts";

const NOTE_LENGTH_LIMIT = 1024;

/** The columns of the event printer (the server prints wide; kubectl hides priority 1). */
const EVENT_COLUMNS = [
  column("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
  column("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
  column(
    "Reason",
    "string",
    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
  ),
  column("Object", "string", "The object that this event is about."),
  column(
    "Subobject",
    "string",
    'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.',
    1,
  ),
  column(
    "Source",
    "string",
    "The component reporting this event. Should be a short machine understandable string.",
    1,
  ),
  column("Message", "string", "A human-readable description of the status of this operation."),
  column(
    "First Seen",
    "string",
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    1,
  ),
  column("Count", "string", "The number of times this event has occurred.", 1),
  { ...NAME_COLUMN, priority: 1 },
];

interface EventView {
  firstTimestamp: unknown;
  lastTimestamp: unknown;
  eventTime: unknown;
  seriesCount: unknown;
  seriesLastObserved: unknown;
  count: unknown;
  type: string;
  reason: string;
  regarding: unknown;
  sourceComponent: string;
  sourceHost: string;
  reportingController: string;
  reportingInstance: string;
  message: string;
}

function eventRow(object: Obj, view: EventView, now: number): unknown[] {
  let first = ageSince(view.firstTimestamp, now);
  if (typeof view.firstTimestamp !== "string" || view.firstTimestamp === "")
    first = ageSince(view.eventTime, now);
  let last =
    typeof view.lastTimestamp === "string" && view.lastTimestamp !== ""
      ? ageSince(view.lastTimestamp, now)
      : first;
  let count = typeof view.count === "number" ? view.count : 0;
  if (view.seriesCount !== undefined) {
    last = ageSince(view.seriesLastObserved, now);
    count = typeof view.seriesCount === "number" ? view.seriesCount : 0;
  } else if (count === 0) {
    count = 1;
  }
  const kind = str(at(view.regarding, "kind")).toLowerCase();
  const name = str(at(view.regarding, "name"));
  const target = name !== "" ? `${kind}/${name}` : kind;
  const component = view.sourceComponent || view.reportingController;
  const instance = view.sourceHost || view.reportingInstance;
  return [
    last,
    view.type,
    view.reason,
    target,
    str(at(view.regarding, "fieldPath")),
    instance === "" ? component : `${component}, ${instance}`,
    view.message.trim(),
    first,
    count,
    nameOf(object),
  ];
}

/** The referenced object's namespace must be the event's; cluster-scoped ones use "" or "default". */
function regardingNamespaceCause(object: Obj, referenceField: string, reference: unknown): FieldCause[] {
  const namespace = str(metaOf(object).namespace);
  const referenced = str(at(reference, "namespace"));
  const matches = referenced === "" ? namespace === "" || namespace === "default" : namespace === referenced;
  return matches
    ? []
    : [fieldInvalid(`${referenceField}.namespace`, referenced, "does not match event.namespace")];
}

const INVOLVED_FIELDS = ["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"];

function referenceSelectors(prefix: string, path: string): Record<string, (object: KubeObject) => string> {
  const selectors: Record<string, (object: KubeObject) => string> = {};
  for (const field of INVOLVED_FIELDS)
    selectors[`${prefix}.${field}`] = (object) => str(at(object, `${path}.${field}`));
  return selectors;
}

export const coreEvents: ResourceDef = defineResource({
  group: "",
  version: "v1",
  resource: "events",
  allowCreateOnUpdate: true,
  kind: "Event",
  namespaced: true,
  shortNames: ["ev"],
  validate(object) {
    const causes = regardingNamespaceCause(object, "involvedObject", object.involvedObject);
    const eventTime = object.eventTime;
    if (typeof eventTime === "string" && eventTime !== "") {
      // New-style events (written through the events API shape) carry the reporting fields.
      if (str(object.reportingComponent) === "") causes.push(fieldRequired("reportingController"));
      if (str(object.reportingInstance) === "") causes.push(fieldRequired("reportingInstance"));
      if (str(object.action) === "") causes.push(fieldRequired("action"));
      if (str(object.reason) === "") causes.push(fieldRequired("reason"));
    }
    if (str(object.message).length > NOTE_LENGTH_LIMIT * 4)
      causes.push(fieldTooLong("message", NOTE_LENGTH_LIMIT * 4));
    return causes;
  },
  specChanged: () => false,
  fieldSelectors: {
    ...referenceSelectors("involvedObject", "involvedObject"),
    reason: (object) => str(object.reason),
    reportingComponent: (object) => str(object.reportingComponent),
    source: (object) => str(at(object, "source.component")),
    type: (object) => str(object.type),
  },
  columns: EVENT_COLUMNS,
  row(object, now) {
    return eventRow(
      object,
      {
        firstTimestamp: object.firstTimestamp,
        lastTimestamp: object.lastTimestamp,
        eventTime: object.eventTime,
        seriesCount: at(object, "series.count"),
        seriesLastObserved: at(object, "series.lastObservedTime"),
        count: object.count,
        type: str(object.type),
        reason: str(object.reason),
        regarding: object.involvedObject,
        sourceComponent: str(at(object, "source.component")),
        sourceHost: str(at(object, "source.host")),
        reportingController: str(object.reportingComponent),
        reportingInstance: str(object.reportingInstance),
        message: str(object.message),
      },
      now,
    );
  },
});

export const eventsV1: ResourceDef = defineResource({
  group: "events.k8s.io",
  version: "v1",
  resource: "events",
  allowCreateOnUpdate: true,
  kind: "Event",
  namespaced: true,
  shortNames: ["ev"],
  validate(object) {
    const causes = regardingNamespaceCause(object, "regarding", object.regarding);
    if (str(object.eventTime) === "") causes.push(fieldRequired("eventTime"));
    if (str(object.reportingController) === "") causes.push(fieldRequired("reportingController"));
    if (str(object.reportingInstance) === "") causes.push(fieldRequired("reportingInstance"));
    if (str(object.action) === "") causes.push(fieldRequired("action"));
    if (str(object.reason) === "") causes.push(fieldRequired("reason"));
    if (object.type !== undefined && object.type !== "Normal" && object.type !== "Warning") {
      causes.push(fieldInvalid("type", object.type, "has invalid value: " + str(object.type)));
    }
    if (str(object.note).length > NOTE_LENGTH_LIMIT) causes.push(fieldTooLong("note", NOTE_LENGTH_LIMIT));
    return causes;
  },
  specChanged: () => false,
  fieldSelectors: {
    // Exactly upstream's events.k8s.io/v1 field labels (AddFieldLabelConversionsForEvent):
    // its own names only; `source` still selects the deprecated source component.
    ...referenceSelectors("regarding", "regarding"),
    reason: (object) => str(object.reason),
    reportingController: (object) => str(object.reportingController),
    source: (object) => str(at(object, "deprecatedSource.component")),
    type: (object) => str(object.type),
  },
  columns: EVENT_COLUMNS,
  row(object, now) {
    const series = isRecord(object.series) ? object.series : undefined;
    return eventRow(
      object,
      {
        firstTimestamp: object.deprecatedFirstTimestamp,
        lastTimestamp: object.deprecatedLastTimestamp,
        eventTime: object.eventTime,
        seriesCount: series?.count,
        seriesLastObserved: series?.lastObservedTime,
        count: object.deprecatedCount,
        type: str(object.type),
        reason: str(object.reason),
        regarding: object.regarding,
        sourceComponent: str(at(object, "deprecatedSource.component")),
        sourceHost: str(at(object, "deprecatedSource.host")),
        reportingController: str(object.reportingController),
        reportingInstance: str(object.reportingInstance),
        message: str(object.note),
      },
      now,
    );
  },
  // Stored as core/v1 events: one object, two shapes.
  storage: {
    group: "",
    resource: "events",
    toStorage: (object) => coreEventFromEventsV1(object),
    fromStorage: (object) => eventsV1FromCoreEvent(object),
  },
});

export const eventResources: readonly ResourceDef[] = Object.freeze([coreEvents, eventsV1]);

// ---- conversion between the two shapes -------------------------------------------------
// Upstream stores one Event and serves it in both groups; these map the fields the way
// pkg/apis/events/v1 conversion does (regarding/involvedObject, note/message,
// deprecatedSource/source, deprecated timestamps and count; reportingController is the core
// type's reportingComponent). Every other field (eventTime, series, action, related, type,
// reason, reportingInstance, metadata) has the same name and meaning in both and is copied.
// A field of the other shape found in the input is dropped, as decoding would drop it.

const V1_TO_CORE: readonly [string, string][] = [
  ["regarding", "involvedObject"],
  ["note", "message"],
  ["reportingController", "reportingComponent"],
  ["deprecatedSource", "source"],
  ["deprecatedFirstTimestamp", "firstTimestamp"],
  ["deprecatedLastTimestamp", "lastTimestamp"],
  ["deprecatedCount", "count"],
];

function renamed(object: KubeObject, pairs: readonly [string, string][], apiVersion: string): KubeObject {
  const out: KubeObject = structuredClone(object);
  for (const [from, to] of pairs) {
    delete out[to];
    if (object[from] !== undefined) out[to] = structuredClone(object[from]);
    delete out[from];
  }
  out.apiVersion = apiVersion;
  out.kind = "Event";
  return out;
}

/** An events.k8s.io/v1 Event in its core/v1 shape. */
export function coreEventFromEventsV1(event: KubeObject): KubeObject {
  return renamed(event, V1_TO_CORE, "v1");
}

/** A core/v1 Event in its events.k8s.io/v1 shape. */
export function eventsV1FromCoreEvent(event: KubeObject): KubeObject {
  return renamed(
    event,
    V1_TO_CORE.map(([v1, core]) => [core, v1]),
    "events.k8s.io/v1",
  );
}
