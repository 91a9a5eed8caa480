// Server-side printing: when the Accept header asks for `as=Table;v=v1;g=meta.k8s.io` (what
// `kubectl get` sends), lists, gets and watch events are answered as meta.k8s.io/v1 Tables
// built from ResourceDef.tableColumns/tableRow. `includeObject` decides what each row carries:
// Metadata (default: a PartialObjectMetadata), Object (the whole object) or None.

import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import { badRequest } from "../transport/status.ts";

export type IncludeObject = "Metadata" | "Object" | "None";

/** True when the Accept header asks for a meta.k8s.io/v1 Table. */
export function wantsTable(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(",").some((entry) => {
    const params = new Map<string, string>();
    for (const part of entry.split(";").slice(1)) {
      const [key, value] = part.split("=");
      if (key && value) params.set(key.trim(), value.trim());
    }
    return params.get("as") === "Table" && params.get("g") === "meta.k8s.io" && params.get("v") === "v1";
  });
}

export function parseIncludeObject(value: string | null): IncludeObject {
  if (value === null || value === "" || value === "Metadata") return "Metadata";
  if (value === "Object" || value === "None") return value;
  throw badRequest(
    `includeObject: Unsupported value: "${value}": supported values: "Metadata", "None", "Object"`,
  );
}

function rowObject(object: KubeObject, include: IncludeObject): unknown {
  if (include === "Object") return object;
  if (include === "None") return undefined;
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata ?? {} };
}

export interface TableOptions {
  def: ResourceDef;
  objects: readonly KubeObject[];
  include: IncludeObject;
  now: number;
  listMeta?: Record<string, unknown>;
  /** Watch events after the first carry no column definitions, as upstream. */
  withColumns?: boolean;
}

export function toTable(options: TableOptions): Record<string, unknown> {
  const columnDefinitions =
    options.withColumns === false ? [] : options.def.tableColumns.map((column) => ({ ...column }));
  const rows = options.objects.map((object) => {
    const row: Record<string, unknown> = { cells: options.def.tableRow(object, options.now) };
    const carried = rowObject(object, options.include);
    if (carried !== undefined) row.object = carried;
    return row;
  });
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: options.listMeta ?? {},
    columnDefinitions,
    rows,
  };
}
