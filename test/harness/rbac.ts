// Components under their own identity and Role, as `csikit up` runs them: the real API server
// with --authorization-mode=RBAC and a --token-auth-file, the RBAC of deploy/rbac/ applied as
// `up` applies it, one kubeconfig per identity (a ServiceAccount token through TokenRequest, or a
// static user's token), and the server's audit events (one per request: who, verb, object,
// code) collected for assertions. Torn down through `defer`, also on failure.

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestContext } from "node:test";
import type { KubeRelease } from "../../src/api/index.ts";
import { silentLogger } from "../../src/base/index.ts";
import {
  FaultInjector,
  startApiServer,
  type AdmissionPlugin,
  type ApiServerHandle,
  type AuditEvent,
} from "../../src/apiserver/index.ts";
import {
  ClusterLayout,
  RBAC_DIR,
  applyManifests,
  clusterOfAdminKubeconfig,
  readManifests,
  requestServiceAccountToken,
  writeComponentKubeconfig,
  writeTokenAuthFile,
  type Manifest,
} from "../../src/cluster/index.ts";
import { KubeClient, loadKubeConfig } from "../../src/kube/index.ts";
import { defer, tempDir } from "./cleanup.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

export interface StaticIdentity {
  /** Name of its kubeconfig (the component). */
  component: string;
  user: string;
  groups: string[];
}

export interface RbacCluster {
  server: ApiServerHandle;
  faults: FaultInjector;
  /** The admin's client (system:masters). */
  admin: KubeClient;
  /** The admin kubeconfig. */
  kubeconfig: string;
  dir: string;
  layout: ClusterLayout;
  /** Every audit event so far, in order of the responses. */
  audit: AuditEvent[];
  /** Kubeconfig of a static identity given at start, by component. */
  staticKubeconfig(component: string): Promise<string>;
  /** Kubeconfig of ServiceAccount namespace/name (its token through TokenRequest). */
  serviceAccountKubeconfig(namespace: string, name: string): Promise<string>;
  /** <identities>/<component>.kubeconfig for `identity`, where `up`'s command lines expect it. */
  componentKubeconfig(component: string, identity: ComponentIdentity): Promise<string>;
}

export async function startRbacCluster(
  t: TestContext,
  options: {
    /** Static users (kube-controller-manager, nodes), as `up` writes them to the token file. */
    staticIdentities?: readonly StaticIdentity[];
    /** RBAC objects applied before anything runs. Default: every file of deploy/rbac/. */
    manifests?: readonly Manifest[];
    /** Admission plugins. Default: the server's own chain. */
    admission?: readonly AdmissionPlugin[];
    /** The Kubernetes release the server acts as. Default: the server's (the newest). */
    release?: KubeRelease;
  } = {},
): Promise<RbacCluster> {
  const dir = await tempDir(t, "csikit-rbac-");
  const layout = new ClusterLayout(join(dir, "state"));
  await layout.create();
  const tokens = await writeTokenAuthFile(layout, options.staticIdentities ?? []);
  const audit: AuditEvent[] = [];
  const controller = new AbortController();
  const faults = new FaultInjector();
  const server = await startApiServer(
    {
      stateDir: layout.stateDir,
      port: 0,
      logger: silentLogger,
      faults,
      authorizationMode: "RBAC",
      tokenAuthFile: layout.tokenAuthFile,
      audit: (event) => audit.push(event),
      ...(options.admission ? { admission: options.admission } : {}),
      ...(options.release ? { release: options.release } : {}),
    },
    controller.signal,
  );
  const admin = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
    qps: 1000,
    burst: 1000,
  });
  defer(t, async () => {
    admin.close();
    controller.abort();
    await server.stopped;
  });
  await applyManifests(admin, options.manifests ?? (await readManifests(RBAC_DIR)));
  const cluster = await clusterOfAdminKubeconfig(layout);
  const staticToken = (user: string): string | undefined => {
    const entry = options.staticIdentities?.find((s) => s.user === user);
    return entry && tokens.get(entry.component);
  };
  return {
    server,
    faults,
    admin,
    kubeconfig: server.kubeconfigPath,
    dir,
    layout,
    audit,
    staticKubeconfig: async (component) => {
      const token = tokens.get(component);
      if (token === undefined) throw new Error(`no static identity for ${component}`);
      return writeComponentKubeconfig(layout, component, cluster, token);
    },
    serviceAccountKubeconfig: async (namespace, name) => {
      const token = await requestServiceAccountToken(admin, namespace, name);
      return writeComponentKubeconfig(layout, `${namespace}-${name}`, cluster, token);
    },
    componentKubeconfig: async (component, identity) => {
      const token =
        identity.kind === "serviceAccount"
          ? await requestServiceAccountToken(admin, identity.namespace, identity.name)
          : staticToken(identity.user);
      if (!token) throw new Error(`no token for ${component}: give its user in staticIdentities`);
      return writeComponentKubeconfig(layout, component, cluster, token);
    },
  };
}

/** The audit events of one user that the server answered 403. */
export function forbidden(audit: readonly AuditEvent[], username?: string): AuditEvent[] {
  return audit.filter(
    (e) => e.responseStatus.code === 403 && (username === undefined || e.user.username === username),
  );
}

/** One line per event: `user verb group/resource[/sub] ns/name -> code`. */
export function describeEvent(event: AuditEvent): string {
  const ref = event.objectRef;
  const what = ref
    ? `${ref.apiGroup ?? ""}/${ref.resource}${ref.subresource ? `/${ref.subresource}` : ""} ${ref.namespace ?? ""}/${ref.name ?? ""}`
    : event.requestURI;
  return `${event.user.username} ${event.verb} ${what} -> ${event.responseStatus.code}`;
}

/** A component's identity, as src/cluster/components.ts gives it. */
export type ComponentIdentity =
  | { kind: "serviceAccount"; namespace: string; name: string }
  | { kind: "user"; user: string; groups: string[] };

/** The API server's name for an identity (audit user.username). */
export function usernameOf(identity: ComponentIdentity): string {
  return identity.kind === "user"
    ? identity.user
    : `system:serviceaccount:${identity.namespace}:${identity.name}`;
}

export interface RunningComponent {
  name: string;
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it exited. */
  stop(): Promise<void>;
}

/**
 * Runs `node src/cli/main.ts <subcommand> <args>` as `csikit up` runs each component (its own
 * process, POD_NAMESPACE=default, plus `env`); stopped with SIGTERM, then SIGKILL after 10 s, at cleanup.
 */
export function spawnComponent(
  t: TestContext,
  instance: { name: string; subcommand?: string; args: readonly string[] },
  env: Readonly<Record<string, string>> = {},
): RunningComponent {
  const child = spawn(process.execPath, [MAIN, instance.subcommand ?? "", ...instance.args], {
    env: { ...process.env, POD_NAMESPACE: "default", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  defer(t, stop);
  return { name: instance.name, child, output: () => text, stop };
}
