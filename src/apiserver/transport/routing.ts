// Turns a request path and method into what it asks for, the way kube-apiserver's
// RequestInfoResolver does: discovery documents, or a verb on a group/version/resource with an
// optional namespace, name and subresource. `/api/v1/namespaces/<ns>/<resource>/...` is
// namespaced; `/api/v1/namespaces/<name>[/status|/finalize]` is the namespace object itself;
// a leading `watch/` segment (legacy) turns list into watch.

export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete" | "deletecollection";

export type Route =
  | { kind: "health"; check: "healthz" | "livez" | "readyz" }
  | { kind: "version" }
  | { kind: "openapi"; path: string }
  | { kind: "coreVersions" }
  | { kind: "groupList" }
  | { kind: "group"; group: string }
  | { kind: "resourceList"; group: string; version: string }
  | { kind: "resource"; request: ResourceRequest }
  | { kind: "notFound" };

export interface ResourceRequest {
  verb: Verb;
  group: string;
  version: string;
  resource: string;
  /** "" for cluster-scoped paths and all-namespace lists. */
  namespace: string;
  /** Whether the path carried /namespaces/<ns>/ (namespaced resource addressed in a namespace). */
  namespaceInPath: boolean;
  name: string;
  subresource: string;
}

const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);

export function resolveRoute(method: string, path: string, watchParam: boolean): Route {
  const trimmed = path.replace(/\/+$/, "");
  if (trimmed === "/healthz" || trimmed.startsWith("/healthz/")) return { kind: "health", check: "healthz" };
  if (trimmed === "/livez" || trimmed.startsWith("/livez/")) return { kind: "health", check: "livez" };
  if (trimmed === "/readyz" || trimmed.startsWith("/readyz/")) return { kind: "health", check: "readyz" };
  if (trimmed === "/version") return { kind: "version" };
  if (trimmed === "/openapi" || trimmed.startsWith("/openapi/")) return { kind: "openapi", path: trimmed };
  const parts = trimmed.split("/").slice(1).map(safeDecode);
  if (parts.some((p) => p === undefined || p === "" || p === "." || p === "..")) return { kind: "notFound" };
  const segments = parts as string[];
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === "api") {
    if (segments.length === 1) return { kind: "coreVersions" };
    group = "";
    version = segments[1]!;
    rest = segments.slice(2);
  } else if (segments[0] === "apis") {
    if (segments.length === 1) return { kind: "groupList" };
    if (segments.length === 2) return { kind: "group", group: segments[1]! };
    group = segments[1]!;
    version = segments[2]!;
    rest = segments.slice(3);
  } else {
    return { kind: "notFound" };
  }
  if (rest.length === 0) return { kind: "resourceList", group, version };
  return resolveResource(method, { group, version, rest, watchParam });
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function resolveResource(
  method: string,
  input: { group: string; version: string; rest: string[]; watchParam: boolean },
): Route {
  let rest = input.rest;
  let legacyWatch = false;
  if (rest[0] === "watch") {
    legacyWatch = true;
    rest = rest.slice(1);
  }
  let namespace = "";
  let namespaceInPath = false;
  if (rest[0] === "namespaces" && rest.length > 1) {
    namespace = rest[1]!;
    if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2]!)) {
      rest = rest.slice(2);
      namespaceInPath = true;
    }
  }
  const [resource, name = "", subresource = "", ...extra] = rest;
  if (resource === undefined || extra.length > 0) return { kind: "notFound" };
  if (!namespaceInPath && resource === "namespaces") namespace = "";
  const verb = verbFor(method, { hasName: name !== "", watch: legacyWatch || input.watchParam });
  if (!verb) return { kind: "notFound" };
  if (legacyWatch && verb !== "watch" && verb !== "get") return { kind: "notFound" };
  return {
    kind: "resource",
    request: {
      verb: legacyWatch && verb === "get" ? "watch" : verb,
      group: input.group,
      version: input.version,
      resource,
      namespace,
      namespaceInPath,
      name,
      subresource,
    },
  };
}

function verbFor(method: string, options: { hasName: boolean; watch: boolean }): Verb | undefined {
  switch (method) {
    case "GET":
    case "HEAD":
      if (options.watch) return "watch";
      return options.hasName ? "get" : "list";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return options.hasName ? "delete" : "deletecollection";
    default:
      return undefined;
  }
}
