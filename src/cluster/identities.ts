// Every component of `csikit up` talks to the API server as itself, never as the admin: the
// sidecars with a token of their ServiceAccount (TokenRequest, as a projected token in a pod),
// the controllers as the user system:kube-controller-manager and each node agent as
// system:node:<name> in the group system:nodes (static tokens from --token-auth-file, the way
// kube-controller-manager and kubelets authenticate with certificates). Each gets its own
// kubeconfig (0600) under <state-dir>/identities/; what each may do is decided by the API
// server with --authorization-mode=Node,RBAC: a node agent by the Node authorizer (only what its
// own pods use) and the NodeRestriction admission plugin (only its own Node, Lease, CSINode and
// pods), every other identity by the RBAC objects of deploy/rbac/. Components that never talk to
// the API server (drivers, registrars, probes) get no credentials at all.

import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { parse, stringify } from "yaml";
import { isErrno, isRecord, CsikitError, writeAtomic } from "../base/index.ts";
import type { KubeClient } from "../kube/index.ts";
import type { ClusterLayout } from "./layout.ts";

export interface StaticUser {
  /** The component this identity is for (its kubeconfig's file name). */
  component: string;
  user: string;
  groups: string[];
}

/** A year: the cluster outlives any shorter token between two `up` runs; every start renews. */
const SERVICE_ACCOUNT_TOKEN_SECONDS = 365 * 24 * 3600;

const writePrivate = (path: string, text: string): Promise<void> => writeAtomic(path, text, 0o600);

/**
 * Writes the --token-auth-file for the static users, keeping the tokens of users it already
 * holds (so kubeconfigs written before stay valid on resume); returns token per component.
 */
export async function writeTokenAuthFile(
  layout: ClusterLayout,
  users: readonly StaticUser[],
): Promise<Map<string, string>> {
  const existing = new Map<string, string>();
  try {
    for (const line of (await readFile(layout.tokenAuthFile, "utf8")).split("\n")) {
      const [token, user] = line.split(",", 3);
      if (token && user) existing.set(user, token);
    }
  } catch (error) {
    if (!isErrno(error, "ENOENT")) throw error;
  }
  const tokens = new Map<string, string>();
  const lines: string[] = [];
  for (const entry of users) {
    const token = existing.get(entry.user) ?? randomBytes(24).toString("hex");
    tokens.set(entry.component, token);
    // kube-apiserver's CSV: token,user,uid,"group1,group2"
    lines.push(`${token},${entry.user},${entry.user},"${entry.groups.join(",")}"`);
  }
  await writePrivate(layout.tokenAuthFile, lines.join("\n") + "\n");
  return tokens;
}

/** A token of the ServiceAccount namespace/name through TokenRequest (serviceaccounts/token). */
export async function requestServiceAccountToken(
  admin: KubeClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<string> {
  const response = await admin.request<unknown>(
    {
      method: "POST",
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: SERVICE_ACCOUNT_TOKEN_SECONDS },
      },
    },
    signal,
  );
  const token = isRecord(response) && isRecord(response.status) ? response.status.token : undefined;
  if (typeof token !== "string" || token === "")
    throw new CsikitError(
      "CSIKIT_ERR_KUBE_API",
      `TokenRequest for ServiceAccount ${namespace}/${name} returned no token`,
    );
  return token;
}

/** The server and CA of the admin kubeconfig the API server wrote, for the components' own. */
export async function clusterOfAdminKubeconfig(
  layout: ClusterLayout,
): Promise<{ server: string; caData: string }> {
  const config: unknown = parse(await readFile(layout.adminKubeconfig, "utf8"));
  const clusters = isRecord(config) && Array.isArray(config.clusters) ? config.clusters : [];
  const first: unknown = clusters[0];
  const cluster = isRecord(first) && isRecord(first.cluster) ? first.cluster : {};
  const server = typeof cluster.server === "string" ? cluster.server : undefined;
  const caData =
    typeof cluster["certificate-authority-data"] === "string"
      ? cluster["certificate-authority-data"]
      : undefined;
  if (!server || !caData)
    throw new CsikitError(
      "CSIKIT_ERR_KUBECONFIG",
      `${layout.adminKubeconfig} has no server or certificate-authority-data`,
    );
  return { server, caData };
}

/** Writes <identities>/<component>.kubeconfig (0600) for one identity; returns its path. */
export async function writeComponentKubeconfig(
  layout: ClusterLayout,
  component: string,
  cluster: { server: string; caData: string },
  token: string,
): Promise<string> {
  const path = layout.kubeconfigOf(component);
  const text = stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "csikit", cluster: { server: cluster.server, "certificate-authority-data": cluster.caData } },
    ],
    users: [{ name: component, user: { token } }],
    contexts: [{ name: "csikit", context: { cluster: "csikit", user: component } }],
    "current-context": "csikit",
  });
  await writePrivate(path, text);
  return path;
}
