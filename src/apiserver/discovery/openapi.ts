// OpenAPI documents for kubectl. kubectl 1.32 validates manifests (`--validate=strict`, its
// default) on the server when the PATCH operation of the kind's group-version in /openapi/v3
// declares the `fieldValidation` query parameter (cli-runtime's queryParamVerifierV3; for CRD
// groups it checks core/v1 Namespace instead); otherwise it falls back to client-side
// validation against /openapi/v2, which fails when that is absent. So /openapi/v3 lists every
// served group-version, and each document declares fieldValidation on every PATCH.
//
// The PATCH request bodies deliberately omit application/strategic-merge-patch+json: kubectl
// apply then computes strategic patches from its compiled-in types (exact upstream merge keys)
// instead of from these schemas, which carry no patch strategies. /openapi/v2 is not served
// (404), which kubectl tolerates once server-side validation is available.

import { createHash } from "node:crypto";
import type { KubeObject, ResourceDef, ResourceRegistry } from "../rest/resource.ts";
import {
  builtinComponentName,
  builtinDecodeError,
  builtinComponentSchemas,
  builtinModelOf,
  unknownBuiltinFields,
  unknownFieldsOfCustomResource,
} from "../resources/index.ts";

/**
 * The version the documents' info names when the caller gives none: kube-apiserver puts its own
 * gitVersion there (completeOpenAPI: the /version gitVersion up to any "-" suffix), so the
 * server passes the release it acts as; this default serves the unit tests.
 */
const DEFAULT_INFO_VERSION = "unversioned";

/** "api/v1" or "apis/<group>/<version>": the keys of the /openapi/v3 root. */
export function openAPIV3PathOf(group: string, version: string): string {
  return group === "" ? `api/${version}` : `apis/${group}/${version}`;
}

function groupVersions(registry: ResourceRegistry): Map<string, ResourceDef[]> {
  const byPath = new Map<string, ResourceDef[]>();
  for (const def of registry.all()) {
    const path = openAPIV3PathOf(def.group, def.version);
    const list = byPath.get(path) ?? [];
    list.push(def);
    byPath.set(path, list);
  }
  return byPath;
}

interface BuiltDocument {
  document: Record<string, unknown>;
  hash: string;
  /** The document as JSON, encoded once: kubectl fetches it on every invocation. */
  encoded: string;
}

/**
 * Documents built once per registry state: registry.all() hands out a new array exactly when
 * the served set changes (a CRD came or went), so the array identifies the state.
 */
const documentCache = new WeakMap<readonly ResourceDef[], Map<string, Map<string, BuiltDocument>>>();

function documents(registry: ResourceRegistry, version: string): Map<string, BuiltDocument> {
  const all = registry.all();
  let byVersion = documentCache.get(all);
  if (byVersion === undefined) {
    byVersion = new Map();
    documentCache.set(all, byVersion);
  }
  let built = byVersion.get(version);
  if (built === undefined) {
    built = new Map();
    const info = Object.freeze({ title: "Kubernetes", version });
    for (const [path, defs] of groupVersions(registry)) {
      const document = buildDocument(path, defs, info);
      const encoded = JSON.stringify(document);
      const hash = createHash("sha512").update(encoded).digest("hex").toUpperCase();
      built.set(path, { document, hash, encoded });
    }
    byVersion.set(version, built);
  }
  return built;
}

/** Body of GET /openapi/v3: {paths: {"api/v1": {serverRelativeURL: "/openapi/v3/api/v1?hash=…"}}}. */
export function openAPIV3Root(
  registry: ResourceRegistry,
  version = DEFAULT_INFO_VERSION,
): {
  paths: Record<string, { serverRelativeURL: string }>;
} {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [path, { hash }] of documents(registry, version)) {
    paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
  }
  return { paths };
}

/**
 * Body of GET /openapi/v3/<path> (path "api/v1" or "apis/<g>/<v>", no leading slash, query
 * ignored), or undefined when no such group-version is served (answer 404).
 */
export function openAPIV3Document(
  registry: ResourceRegistry,
  path: string,
  version = DEFAULT_INFO_VERSION,
): Record<string, unknown> | undefined {
  const clean =
    path
      .replace(/^\/+/, "")
      .replace(/^openapi\/v3\//, "")
      .split("?")[0] ?? "";
  return documents(registry, version).get(clean)?.document;
}

function schemaName(def: ResourceDef): string {
  const model = def.custom === true ? undefined : builtinModelOf(def.group, def.version, def.kind);
  if (model !== undefined) return builtinComponentName(model);
  const group = def.group === "" ? "core" : def.group;
  const reversed = group.split(".").reverse().join(".");
  return def.group === "" || def.group.endsWith(".k8s.io")
    ? `io.k8s.api.${def.group === "" ? "core" : def.group.replace(/\.k8s\.io$/, "").replace(/\./g, "")}.${def.version}.${def.kind}`
    : `${reversed}.${def.version}.${def.kind}`;
}

const QUERY = (name: string, description: string) => ({
  name,
  in: "query",
  description,
  schema: { type: "string", uniqueItems: true },
});

const WRITE_PARAMETERS = [
  QUERY("dryRun", "When present, indicates that modifications should not be persisted."),
  QUERY(
    "fieldManager",
    "fieldManager is a name associated with the actor or entity that is making these changes.",
  ),
  QUERY(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
  ),
];

function gvk(def: ResourceDef): Record<string, string> {
  return { group: def.group, version: def.version, kind: def.kind };
}

function operation(
  def: ResourceDef,
  action: string,
  verb: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const ref = { $ref: `#/components/schemas/${schemaName(def)}` };
  return {
    operationId: `${verb}${def.kind}`,
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk(def),
    responses: { "200": { description: "OK", content: { "application/json": { schema: ref } } } },
    ...extra,
  };
}

function pathsFor(def: ResourceDef, prefix: string): Record<string, unknown> {
  const ref = { $ref: `#/components/schemas/${schemaName(def)}` };
  const body = { content: { "application/json": { schema: ref } }, required: true };
  const patchBody = {
    content: {
      "application/json-patch+json": { schema: { type: "object" } },
      "application/merge-patch+json": { schema: { type: "object" } },
      "application/apply-patch+yaml": { schema: { type: "object" } },
    },
    required: true,
  };
  const collection = def.namespaced
    ? `${prefix}/namespaces/{namespace}/${def.resource}`
    : `${prefix}/${def.resource}`;
  const item = `${collection}/{name}`;
  const itemOps: Record<string, unknown> = {
    get: operation(def, "get", "read"),
    put: operation(def, "put", "replace", { parameters: WRITE_PARAMETERS, requestBody: body }),
    patch: operation(def, "patch", "patch", {
      parameters: [...WRITE_PARAMETERS, QUERY("force", 'Force is going to "force" Apply requests.')],
      requestBody: patchBody,
    }),
    delete: operation(def, "delete", "delete"),
  };
  const paths: Record<string, unknown> = {
    [collection]: {
      get: operation(def, "list", "list"),
      post: operation(def, "post", "create", { parameters: WRITE_PARAMETERS, requestBody: body }),
    },
    [item]: itemOps,
  };
  if (def.hasStatus) {
    paths[`${item}/status`] = {
      get: operation(def, "get", "read", { operationId: `read${def.kind}Status` }),
      put: operation(def, "put", "replace", {
        operationId: `replace${def.kind}Status`,
        parameters: WRITE_PARAMETERS,
        requestBody: body,
      }),
      patch: operation(def, "patch", "patch", {
        operationId: `patch${def.kind}Status`,
        parameters: WRITE_PARAMETERS,
        requestBody: patchBody,
      }),
    };
  }
  return paths;
}

function componentSchema(def: ResourceDef): Record<string, unknown> {
  const base = def.openAPISchema ?? {};
  const properties = { ...((base.properties as Record<string, unknown> | undefined) ?? {}) };
  properties.apiVersion ??= {
    type: "string",
    description: "APIVersion defines the versioned schema of this representation of an object.",
  };
  properties.kind ??= {
    type: "string",
    description: "Kind is a string value representing the REST resource this object represents.",
  };
  properties.metadata = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  const schema: Record<string, unknown> = {
    description:
      typeof base.description === "string"
        ? base.description
        : `${def.kind} (${def.group || "core"}/${def.version})`,
    type: "object",
    properties,
    "x-kubernetes-group-version-kind": [gvk(def)],
  };
  // Kinds without a declared schema accept any fields; the server validates them itself.
  if (def.openAPISchema === undefined) schema["x-kubernetes-preserve-unknown-fields"] = true;
  return schema;
}

function buildDocument(
  path: string,
  defs: readonly ResourceDef[],
  info: Readonly<{ title: string; version: string }>,
): Record<string, unknown> {
  const prefix = `/${path}`;
  let paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  for (const def of defs) {
    paths = { ...paths, ...pathsFor(def, prefix) };
    const model = def.custom === true ? undefined : builtinModelOf(def.group, def.version, def.kind);
    if (model !== undefined) {
      // Field names and types of the built-in kind, so `kubectl explain` can walk them.
      const built = builtinComponentSchemas(model);
      const root = builtinComponentName(model);
      built[root] = { ...built[root], "x-kubernetes-group-version-kind": [gvk(def)] };
      Object.assign(schemas, built);
    } else {
      schemas[schemaName(def)] = componentSchema(def);
    }
  }
  return { openapi: "3.0.0", info, paths, components: { schemas } };
}

/**
 * Unknown fields of a request body under its kind's schema, as the paths upstream names in
 * `strict decoding error: unknown field "spec.x"` — for fieldValidation=Strict (400 BadRequest,
 * all of them joined with ", ") and Warn (one `Warning: 299 - "unknown field \"spec.x\""`
 * header each). Call it on the body before applyDefaults(), which drops those fields.
 */
export function unknownFields(def: ResourceDef, object: KubeObject): string[] {
  if (def.custom === true) return unknownFieldsOfCustomResource(def, object);
  const model = builtinModelOf(def.group, def.version, def.kind);
  return model === undefined ? [] : unknownBuiltinFields(model, object);
}

/**
 * The 400 message kube-apiserver gives when a built-in object's body does not decode into its
 * Go types (a string where an int32 belongs, a non-base64 Secret value, …), e.g.
 * `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct
 * field ContainerPort.spec.containers.ports.containerPort of type int32`; undefined when it
 * decodes (and always for custom resources, whose schemas are checked by validation).
 */
export function decodeError(def: ResourceDef, object: KubeObject): string | undefined {
  if (def.custom === true) return undefined;
  const model = builtinModelOf(def.group, def.version, def.kind);
  const error = model === undefined ? undefined : builtinDecodeError(model, object);
  return error === undefined
    ? undefined
    : `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: ${error}`;
}

/** An /openapi/v3 answer as sent: the JSON text, its entity tag, and whether it never changes. */
export interface OpenApiBody {
  encoded: string;
  /** Quoted, as an ETag header carries it. */
  etag: string;
  /**
   * The request named the document by its current hash (the root's serverRelativeURL): that URL
   * names these bytes for good, so a client may keep them (Cache-Control: public, immutable), as
   * kube-apiserver lets kubectl's HTTP cache do.
   */
  immutable: boolean;
}

const rootBodies = new WeakMap<readonly ResourceDef[], Map<string, OpenApiBody>>();

/**
 * The encoded answer to an /openapi/... request path (query: hash only), built once per
 * registry state like the documents; undefined = 404. What openApiDocument answers, ready to send.
 */
export function openApiBody(
  registry: ResourceRegistry,
  path: string,
  version = DEFAULT_INFO_VERSION,
): OpenApiBody | undefined {
  const [pathPart = "", query = ""] = path.split("?", 2);
  const clean = pathPart.replace(/\/+$/, "");
  if (clean === "/openapi/v3") {
    const all = registry.all();
    let byVersion = rootBodies.get(all);
    if (byVersion === undefined) {
      byVersion = new Map();
      rootBodies.set(all, byVersion);
    }
    let body = byVersion.get(version);
    if (body === undefined) {
      const encoded = JSON.stringify(openAPIV3Root(registry, version));
      const hash = createHash("sha256").update(encoded).digest("hex").toUpperCase();
      body = { encoded, etag: `"${hash}"`, immutable: false };
      byVersion.set(version, body);
    }
    return body;
  }
  if (!clean.startsWith("/openapi/v3/")) return undefined;
  const built = documents(registry, version).get(clean.slice("/openapi/v3/".length));
  if (built === undefined) return undefined;
  const asked = new URLSearchParams(query).get("hash");
  return { encoded: built.encoded, etag: `"${built.hash}"`, immutable: asked === built.hash };
}

/**
 * Dispatches an /openapi/... request path (query ignored): "/openapi/v3" → the root index,
 * "/openapi/v3/api/v1" etc. → that document, anything else (also /openapi/v2) → undefined (404).
 * `version` is what the documents' info.version says: the server's gitVersion.
 */
export function openApiDocument(
  registry: ResourceRegistry,
  path: string,
  version = DEFAULT_INFO_VERSION,
): unknown {
  const clean = (path.split("?")[0] ?? "").replace(/\/+$/, "");
  if (clean === "/openapi/v3") return openAPIV3Root(registry, version);
  if (clean.startsWith("/openapi/v3/"))
    return openAPIV3Document(registry, clean.slice("/openapi/v3/".length), version);
  return undefined;
}
