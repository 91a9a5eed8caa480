// Delegated authentication and authorization of a component's secure port, as
// kube-controller-manager and the kubelet do it: the bearer token of a request is sent to the API
// server in a TokenReview, and the user it names in a SubjectAccessReview for what the request
// asks (a non-resource path for the controller manager, `nodes/<subresource>` for the kubelet).
// Answers are cached for ten seconds, as upstream's defaults, so a Prometheus scrape every few
// seconds costs the API server nothing after the first. Paths on the always-allow list (the
// health checks) skip both, as `--authorization-always-allow-paths` does upstream.

import type { IncomingMessage } from "node:http";
import { errorMessage, realClock, type Clock, type Logger } from "../base/index.ts";
import type { KubeClient } from "./client.ts";
import type { EndpointAuthorizer, EndpointRefusal } from "./http-endpoint.ts";

const TOKEN_REVIEWS = {
  group: "authentication.k8s.io",
  version: "v1",
  resource: "tokenreviews",
  kind: "TokenReview",
  namespaced: false,
} as const;
const SUBJECT_ACCESS_REVIEWS = {
  group: "authorization.k8s.io",
  version: "v1",
  resource: "subjectaccessreviews",
  kind: "SubjectAccessReview",
  namespaced: false,
} as const;

/** The upstream cache lifetimes (--authentication-token-webhook-cache-ttl and friends: 10s). */
const CACHE_TTL_MS = 10_000;

/** What a request asks, in SubjectAccessReview terms. */
export type AccessAttributes =
  | { nonResourceAttributes: { path: string; verb: string } }
  | {
      resourceAttributes: {
        group: string;
        resource: string;
        subresource: string;
        name: string;
        namespace: string;
        verb: string;
      };
    };

interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface DelegatedAuthOptions {
  client: KubeClient;
  /** Paths served to anyone: exact, or a prefix ending in "*" (upstream's syntax). */
  alwaysAllowPaths: readonly string[];
  /** What a request to `url` with `method` asks for. */
  attributes: (method: string, url: URL) => AccessAttributes;
  logger: Logger;
  clock?: Clock;
}

/** The HTTP verb → Kubernetes verb mapping upstream's request-info resolver uses for these ports. */
export function verbOf(method: string): string {
  switch (method) {
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return "delete";
    default:
      return "get";
  }
}

/** kube-controller-manager's attributes: the request's path as a non-resource URL. */
export function nonResourceAttributes(method: string, url: URL): AccessAttributes {
  return { nonResourceAttributes: { path: url.pathname, verb: verbOf(method) } };
}

/**
 * The kubelet's attributes: the node object's subresource the path belongs to
 * (/metrics → nodes/metrics, /stats → nodes/stats, /logs → nodes/log, /spec → nodes/spec,
 * anything else nodes/proxy), named by the node.
 */
export function kubeletAttributes(nodeName: string): (method: string, url: URL) => AccessAttributes {
  return (method, url) => {
    const path = url.pathname;
    const under = (prefix: string) => path === prefix || path.startsWith(prefix + "/");
    const subresource = under("/metrics")
      ? "metrics"
      : under("/stats")
        ? "stats"
        : under("/logs")
          ? "log"
          : under("/spec")
            ? "spec"
            : "proxy";
    return {
      resourceAttributes: {
        group: "",
        resource: "nodes",
        subresource,
        name: nodeName,
        namespace: "",
        verb: verbOf(method),
      },
    };
  };
}

function alwaysAllowed(patterns: readonly string[], path: string): boolean {
  return patterns.some((pattern) =>
    pattern.endsWith("*") ? path.startsWith(pattern.slice(0, -1)) : path === pattern,
  );
}

function describe(attributes: AccessAttributes): string {
  if ("nonResourceAttributes" in attributes)
    return `${attributes.nonResourceAttributes.verb} path "${attributes.nonResourceAttributes.path}"`;
  const r = attributes.resourceAttributes;
  return `${r.verb} resource "${r.resource}" in API group "${r.group}"${r.subresource ? ` subresource "${r.subresource}"` : ""}`;
}

/** An EndpointAuthorizer that asks the API server, with upstream's caching. */
export function delegatedAuthorizer(options: DelegatedAuthOptions): EndpointAuthorizer {
  const clock = options.clock ?? realClock;
  const users = new Map<string, { at: number; user: ReviewedUser | undefined }>();
  const decisions = new Map<string, { at: number; allowed: boolean }>();
  const fresh = (at: number) => clock.now() - at < CACHE_TTL_MS;

  const authenticate = async (token: string): Promise<ReviewedUser | undefined> => {
    const cached = users.get(token);
    if (cached && fresh(cached.at)) return cached.user;
    const review = await options.client.create(TOKEN_REVIEWS, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      metadata: {},
      spec: { token },
    } as never);
    const status = (review as { status?: { authenticated?: boolean; user?: ReviewedUser } }).status;
    const user = status?.authenticated === true && status.user?.username ? status.user : undefined;
    if (users.size > 1000) users.clear();
    users.set(token, { at: clock.now(), user });
    return user;
  };

  const authorize = async (user: ReviewedUser, attributes: AccessAttributes): Promise<boolean> => {
    const key = JSON.stringify([user.username, user.groups ?? [], attributes]);
    const cached = decisions.get(key);
    if (cached && fresh(cached.at)) return cached.allowed;
    const review = await options.client.create(SUBJECT_ACCESS_REVIEWS, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      metadata: {},
      spec: {
        user: user.username,
        ...(user.uid ? { uid: user.uid } : {}),
        groups: user.groups ?? [],
        ...(user.extra ? { extra: user.extra } : {}),
        ...attributes,
      },
    } as never);
    const allowed = (review as { status?: { allowed?: boolean } }).status?.allowed === true;
    if (decisions.size > 1000) decisions.clear();
    decisions.set(key, { at: clock.now(), allowed });
    return allowed;
  };

  return async (req: IncomingMessage, url: URL): Promise<EndpointRefusal | undefined> => {
    if (alwaysAllowed(options.alwaysAllowPaths, url.pathname)) return undefined;
    const header = req.headers.authorization ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const attributes = options.attributes(req.method ?? "GET", url);
    try {
      // No token: the anonymous user, whom the authorizer then refuses (upstream's
      // --anonymous-auth with no grant for system:anonymous).
      const user = match
        ? await authenticate(match[1]!)
        : { username: "system:anonymous", groups: ["system:unauthenticated"] };
      if (!user) return { status: 401, message: "Unauthorized" };
      if (await authorize(user, attributes)) return undefined;
      return { status: 403, message: `Forbidden: User "${user.username}" cannot ${describe(attributes)}` };
    } catch (error) {
      // The token never reaches the log: only the API server's answer does.
      options.logger.warn("delegated authorization failed", { path: url.pathname, err: errorMessage(error) });
      return { status: 500, message: "Internal Server Error: authorization could not be checked" };
    }
  };
}
