// API server fixture (test/harness, because only tests may import the API server): starts the real embedded API server on port 0 in a temp state dir and hands
// back a KubeClient built from the kubeconfig it wrote, exactly as a sidecar would build one.
// The server serves its built-in kinds (configmaps, events, leases, ...), with their real
// defaults and validation.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { silentLogger } from "../../src/base/index.ts";
import {
  admissionChain,
  FaultInjector,
  startApiServer,
  type ApiServerHandle,
} from "../../src/apiserver/index.ts";
import { KubeClient, loadKubeConfig, type KubeClientOptions } from "../../src/kube/index.ts";
import type { GroupVersionResource } from "../../src/kube/index.ts";

export const CONFIGMAPS: GroupVersionResource = {
  group: "",
  version: "v1",
  resource: "configmaps",
  namespaced: true,
};

export interface TestServer {
  server: ApiServerHandle;
  faults: FaultInjector;
  kubeconfigPath: string;
  /** A fresh client with its own token bucket (default: a bucket too large to matter). */
  client(options?: Omit<KubeClientOptions, "kubeConfig">): KubeClient;
  stop(): Promise<void>;
}

/** The test token of node `name` (system:node:<name> in system:nodes) on a server started with `nodes`. */
export function nodeToken(name: string): string {
  return `node-token-${name}`;
}

/** Admin clients of servers that confine nodes (started with `nodes`). */
const confiningClients = new WeakSet<KubeClient>();

/**
 * The client node `nodeName` runs with: its own token (system:node:<name>) when `admin` is of a
 * server started with `nodes` (Node,RBAC and NodeRestriction on, as `csikit up` runs them),
 * else `admin` itself.
 */
export function nodeClient(admin: KubeClient, nodeName: string): KubeClient {
  if (!confiningClients.has(admin)) return admin;
  const token = nodeToken(nodeName);
  return new KubeClient({
    kubeConfig: {
      ...admin.kubeConfig,
      auth: {
        credentials: () => Promise.resolve({ headers: { Authorization: `Bearer ${token}` } }),
        unauthorized: () => {},
      },
      source: `test token of system:node:${nodeName}`,
    },
    qps: 1000,
    burst: 1000,
  });
}

export async function startTestServer(
  options: {
    compactionWindow?: number;
    bookmarkIntervalMs?: number;
    /**
     * Node names with a static token each (nodeToken), and the server confining them as
     * `csikit up` does: --authorization-mode=Node,RBAC, NodeRestriction admission.
     */
    nodes?: readonly string[];
  } = {},
): Promise<TestServer> {
  const stateDir = await mkdtemp(join(tmpdir(), "csikit-kube-"));
  const controller = new AbortController();
  const faults = new FaultInjector();
  let server: ApiServerHandle;
  const nodes = options.nodes ?? [];
  try {
    const tokenAuthFile = join(stateDir, "node-tokens.csv");
    if (nodes.length > 0) {
      const lines = nodes.map((n) => `${nodeToken(n)},system:node:${n},system:node:${n},"system:nodes"`);
      await writeFile(tokenAuthFile, lines.join("\n") + "\n", { mode: 0o600 });
    }
    server = await startApiServer(
      {
        stateDir,
        port: 0,
        faults,
        logger: silentLogger,
        ...(nodes.length > 0
          ? {
              tokenAuthFile,
              authorizationMode: "Node,RBAC",
              admission: admissionChain({ enable: ["NodeRestriction"] }),
            }
          : {}),
        ...(options.compactionWindow !== undefined ? { compactionWindow: options.compactionWindow } : {}),
        ...(options.bookmarkIntervalMs !== undefined
          ? { bookmarkIntervalMs: options.bookmarkIntervalMs }
          : {}),
      },
      controller.signal,
    );
  } catch (error) {
    await rm(stateDir, { recursive: true, force: true });
    throw error;
  }
  return {
    server,
    faults,
    kubeconfigPath: server.kubeconfigPath,
    client: (clientOptions = {}) => {
      const client = new KubeClient({
        kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
        qps: 1000,
        burst: 1000,
        ...clientOptions,
      });
      if (nodes.length > 0) confiningClients.add(client);
      return client;
    },
    async stop() {
      controller.abort();
      await server.stopped;
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** One server (and a client of it) for a whole test file: started before its first test. */
export interface SharedServer {
  readonly server: TestServer;
  readonly client: KubeClient;
}

/**
 * Starts one API server for the whole file in a `before` hook and stops it in an `after` hook;
 * `then` runs once the server is up (to start what the file's tests share, stopped by the
 * function it returns, before the server).
 */
export function sharedTestServer(then?: (shared: SharedServer) => () => Promise<void>): SharedServer {
  let server: TestServer | undefined;
  let client: KubeClient | undefined;
  let stopThen: (() => Promise<void>) | undefined;
  const shared: SharedServer = {
    get server() {
      if (!server) throw new Error("sharedTestServer: the server starts in the file's before hook");
      return server;
    },
    get client() {
      if (!client) throw new Error("sharedTestServer: the server starts in the file's before hook");
      return client;
    },
  };
  before(async () => {
    server = await startTestServer();
    client = server.client();
    stopThen = then?.(shared);
  });
  after(async () => {
    await stopThen?.();
    await server?.stop();
  });
  return shared;
}
