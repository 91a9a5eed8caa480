// Test fixture (no tests of its own; named *.test.ts because only test files may import the
// API server): starts the real embedded API server on port 0 in a temp state dir and hands
// back a KubeClient built from the kubeconfig it wrote, exactly as a sidecar would build one.
// Until the API server exports its built-in registry, the few kinds these tests need
// (leases, events, configmaps) are declared here as minimal ResourceDefs.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../base/index.ts";
import {
  FaultInjector,
  startApiServer,
  type ApiServerHandle,
  type ResourceDef,
  type ResourceRegistry,
} from "../apiserver/index.ts";
import { KubeClient, loadKubeConfig, type KubeClientOptions } from "./client.ts";
import type { GroupVersionResource } from "./types.ts";

export const CONFIGMAPS: GroupVersionResource = {
  group: "",
  version: "v1",
  resource: "configmaps",
  namespaced: true,
};

function minimalDef(group: string, resource: string, kind: string): ResourceDef {
  const name = (object: { metadata?: unknown }): string => {
    const meta = object.metadata;
    return typeof meta === "object" && meta !== null && "name" in meta && typeof meta.name === "string"
      ? meta.name
      : "";
  };
  const namespace = (object: { metadata?: unknown }): string => {
    const meta = object.metadata;
    return typeof meta === "object" &&
      meta !== null &&
      "namespace" in meta &&
      typeof meta.namespace === "string"
      ? meta.namespace
      : "";
  };
  return {
    group,
    version: "v1",
    resource,
    singular: kind.toLowerCase(),
    kind,
    listKind: `${kind}List`,
    namespaced: true,
    shortNames: [],
    categories: [],
    verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    subresources: [],
    hasStatus: false,
    applyDefaults: () => {},
    validateCreate: () => [],
    validateUpdate: () => [],
    validateStatusUpdate: () => [],
    specChanged: (a, b) => JSON.stringify(a.spec) !== JSON.stringify(b.spec),
    fieldSelectors: { "metadata.name": name, "metadata.namespace": namespace },
    tableColumns: [{ name: "Name", type: "string", format: "name", description: "Name", priority: 0 }],
    tableRow: (object) => [name(object)],
    patchStrategies: {},
  };
}

function fixtureRegistry(): ResourceRegistry {
  const defs = [
    minimalDef("coordination.k8s.io", "leases", "Lease"),
    minimalDef("", "events", "Event"),
    minimalDef("", "configmaps", "ConfigMap"),
  ];
  return {
    all: () => defs,
    lookup: (group, version, resource) =>
      defs.find((d) => d.group === group && d.version === version && d.resource === resource),
    onChange: () => {},
  };
}

export interface TestServer {
  server: ApiServerHandle;
  faults: FaultInjector;
  kubeconfigPath: string;
  /** A fresh client with its own token bucket (default: a bucket too large to matter). */
  client(options?: Omit<KubeClientOptions, "kubeConfig">): KubeClient;
  stop(): Promise<void>;
}

export async function startTestServer(
  options: { compactionWindow?: number; bookmarkIntervalMs?: number } = {},
): Promise<TestServer> {
  const stateDir = await mkdtemp(join(tmpdir(), "csikit-kube-"));
  const controller = new AbortController();
  const faults = new FaultInjector();
  let server: ApiServerHandle;
  try {
    server = await startApiServer(
      {
        stateDir,
        port: 0,
        registry: fixtureRegistry(),
        faults,
        logger: silentLogger,
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
    client: (clientOptions = {}) =>
      new KubeClient({
        kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
        qps: 1000,
        burst: 1000,
        ...clientOptions,
      }),
    async stop() {
      controller.abort();
      await server.stopped;
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}
