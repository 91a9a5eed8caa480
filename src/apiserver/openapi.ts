// OpenAPI v3 documents, as much as kubectl needs: /openapi/v3 lists one document per
// group/version, and each document has a PATCH operation per resource tagged with
// x-kubernetes-group-version-kind and the `fieldValidation` query parameter. That tells kubectl
// (apply, create -f, replace) the server validates fields itself, so it skips client-side
// schema validation instead of failing with "failed to download openapi". PATCH operations
// declare no strategic-merge request body, so `kubectl apply` computes patches from its
// compiled-in types (built-in kinds) or falls back to JSON merge patch (custom resources),
// as it does against a real server without OpenAPI schemas. A kind's own schema
// (ResourceDef.openAPISchema) is published under components.schemas when known.

import { createHash } from "node:crypto";
import type { ResourceDef, ResourceRegistry } from "./resource.ts";

function groupVersionPath(group: string, version: string): string {
  return group === "" ? `api/${version}` : `apis/${group}/${version}`;
}

function groupVersions(registry: ResourceRegistry): Map<string, ResourceDef[]> {
  const byPath = new Map<string, ResourceDef[]>();
  for (const def of registry.all()) {
    const path = groupVersionPath(def.group, def.version);
    byPath.set(path, [...(byPath.get(path) ?? []), def]);
  }
  return byPath;
}

function schemaName(def: ResourceDef): string {
  const group = def.group === "" ? "core" : def.group;
  return `csikit.${group}.${def.version}.${def.kind}`;
}

function groupVersionDocument(path: string, defs: readonly ResourceDef[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  const fieldValidation = {
    name: "fieldValidation",
    in: "query",
    description: "Strict, Warn or Ignore: how the server treats unknown or duplicate fields",
    schema: { type: "string", uniqueItems: true },
  };
  for (const def of defs) {
    const gvk = { group: def.group, version: def.version, kind: def.kind };
    const base = def.namespaced
      ? `/${path}/namespaces/{namespace}/${def.resource}`
      : `/${path}/${def.resource}`;
    paths[`${base}/{name}`] = {
      patch: {
        operationId: `patch${def.kind}`,
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": gvk,
        parameters: [fieldValidation],
        responses: { "200": { description: "OK" } },
      },
    };
    paths[base] = {
      post: {
        operationId: `create${def.kind}`,
        "x-kubernetes-action": "post",
        "x-kubernetes-group-version-kind": gvk,
        parameters: [fieldValidation],
        responses: { "201": { description: "Created" } },
      },
    };
    if (def.openAPISchema) {
      schemas[schemaName(def)] = { ...def.openAPISchema, "x-kubernetes-group-version-kind": [gvk] };
    }
  }
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: "v1.33.0+csikit" },
    paths,
    components: { schemas },
  };
}

/** Answers /openapi/v3 and /openapi/v3/<gv path>; undefined for anything else (404). */
export function openApiDocument(registry: ResourceRegistry, requestPath: string): unknown {
  const documents = groupVersions(registry);
  if (requestPath === "/openapi/v3") {
    const paths: Record<string, unknown> = {};
    for (const [path, defs] of documents) {
      const hash = createHash("sha512")
        .update(JSON.stringify(groupVersionDocument(path, defs)))
        .digest("hex")
        .slice(0, 32)
        .toUpperCase();
      paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
    }
    return { paths };
  }
  const prefix = "/openapi/v3/";
  if (!requestPath.startsWith(prefix)) return undefined;
  const path = requestPath.slice(prefix.length);
  const defs = documents.get(path);
  return defs ? groupVersionDocument(path, defs) : undefined;
}
