// Label and field selectors of list/watch requests, turned into matchers over one object. The
// parsing is src/api's (labels.Parse and fields.ParseSelector semantics, shared with the
// controllers); this module only maps parse errors to 400 BadRequest and field paths to the
// kind's ResourceDef.fieldSelectors (metadata.name and metadata.namespace for every kind).

import { ValidationError } from "../../base/index.ts";
import {
  fieldsMatch,
  labelsMatch,
  parseFieldSelector as parseFields,
  parseLabelSelector as parseLabels,
} from "../../api/index.ts";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { badRequest } from "../transport/status.ts";

export type ObjectMatcher = (object: KubeObject) => boolean;

function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof ValidationError) throw badRequest(error.message);
    throw error;
  }
}

function labelsOf(object: KubeObject): Record<string, string> {
  const labels = object.metadata?.labels;
  if (typeof labels !== "object" || labels === null || Array.isArray(labels)) return {};
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels)) out[key] = String(value);
  return out;
}

/** Parses `labelSelector`; an empty or absent selector matches everything. */
export function parseLabelSelector(text: string | null | undefined): ObjectMatcher {
  if (text === null || text === undefined || text.trim() === "") return () => true;
  const requirements = parsed(() => parseLabels(text));
  return (object) => labelsMatch(requirements, labelsOf(object));
}

const METADATA_FIELDS: Readonly<Record<string, "name" | "namespace">> = {
  "metadata.name": "name",
  "metadata.namespace": "namespace",
};

/** Parses `fieldSelector` against the fields the kind supports (metadata.name/namespace always). */
export function parseFieldSelector(
  text: string | null | undefined,
  def: Pick<ResourceDef, "fieldSelectors">,
): ObjectMatcher {
  if (text === null || text === undefined || text.trim() === "") return () => true;
  const requirements = parsed(() => parseFields(text));
  const getters = new Map<string, (object: KubeObject) => string>();
  for (const { field } of requirements) {
    const getter = fieldGetter(field, def);
    if (!getter) throw badRequest(`field label not supported: ${field}`);
    getters.set(field, getter);
  }
  return (object) => fieldsMatch(requirements, (field) => getters.get(field)?.(object));
}

function fieldGetter(
  field: string,
  def: Pick<ResourceDef, "fieldSelectors">,
): ((object: KubeObject) => string) | undefined {
  const own = def.fieldSelectors[field];
  if (own) return own;
  const key = METADATA_FIELDS[field];
  if (key === undefined) return undefined;
  return (object) => {
    const value = object.metadata?.[key];
    return typeof value === "string" ? value : "";
  };
}
