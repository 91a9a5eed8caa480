// The admin kubeconfig the API server writes for kubectl and @kubernetes/client-node: one
// cluster carrying the CA inline, one user with the bearer token, context `csikit` current.
// Written 0600 because it holds the token.

import { stringify } from "yaml";
import { writeAtomic } from "../../base/index.ts";

export const KUBECONFIG_CONTEXT = "csikit";

export interface KubeconfigOptions {
  server: string;
  caCertPem: string;
  token: string;
}

export function renderKubeconfig(options: KubeconfigOptions): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: KUBECONFIG_CONTEXT,
        cluster: {
          server: options.server,
          "certificate-authority-data": Buffer.from(options.caCertPem).toString("base64"),
        },
      },
    ],
    users: [{ name: "csikit-admin", user: { token: options.token } }],
    contexts: [
      {
        name: KUBECONFIG_CONTEXT,
        context: { cluster: KUBECONFIG_CONTEXT, user: "csikit-admin", namespace: "default" },
      },
    ],
    "current-context": KUBECONFIG_CONTEXT,
    preferences: {},
  });
}

export async function writeKubeconfig(path: string, options: KubeconfigOptions): Promise<void> {
  await writeAtomic(path, renderKubeconfig(options), 0o600);
}
