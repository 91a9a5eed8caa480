// The embedded Kubernetes-compatible API server's lifecycle: credentials and SQLite store under
// the state directory, the system namespaces, an HTTPS listener (127.0.0.1 by default) and
// the admin kubeconfig. `startApiServer` resolves once it is listening and hands back what
// clients need; aborting `signal` stops it, and `stopped` resolves when every watch, socket,
// timer and the database are closed. `runApiServer` is the same as the `start(options, signal)`
// lifecycle of DESIGN.md: it resolves only when fully stopped.

import { createServer, type Server } from "node:https";
import { DEFAULT_CIPHERS } from "node:tls";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { Logger, realClock, type Clock } from "../base/index.ts";
import { kubeRelease, type KubeRelease } from "../api/index.ts";
import type { ResourceRegistry } from "./rest/resource.ts";
import { DEFAULT_COMPACTION_INTERVAL_MS, openSqliteStore, type SqliteStore } from "./storage/index.ts";
import { CustomResourceSync, isCustomResourceRegistry } from "./admission/crds.ts";
import type { FaultInjector } from "./transport/faults.ts";
import type { AuditBackend } from "./auth/audit.ts";
import { createBuiltinRegistry } from "./registry.ts";
import { createRequestHandler, type HandlerOptions, type OpenApiProvider } from "./rest/handler.ts";
import { createUpgradeHandler, isUpgradePath } from "./rest/upgrade.ts";
import { KUBELET_CLIENT_USER } from "./rest/kubelet-proxy.ts";
import { DEFAULT_WATCH_MAX_PENDING_BYTES } from "./rest/watch.ts";
import { writeKubeconfig } from "./transport/kubeconfig.ts";
import { ensureSystemNamespaces, NamespaceReaper } from "./admission/namespaces.ts";
import { loadOrCreateCredentials } from "./transport/pki.ts";
import type { RestContext } from "./rest/rest.ts";
import { admissionChain, type AdmissionPlugin } from "./admission/admission.ts";
import { secureDatabaseFiles, secureStateDir } from "./transport/state-dir.ts";
import { Authenticator, MASTERS_GROUP, loadTokenAuthFile } from "./auth/authn.ts";
import { Authorizer, ensureBootstrapPolicy, type AuthorizationMode } from "./auth/authz.ts";
import { loadOrCreateSigningKey, ServiceAccountTokens } from "./auth/sa-tokens.ts";

/**
 * Node's default cipher list with its TLS 1.3 suites reordered, most preferred first (see
 * createServer below); Node takes TLS 1.3 suites from the same `ciphers` string. The TLS 1.2
 * part stays Node's own.
 */
const CIPHERS = [
  "TLS_AES_128_GCM_SHA256",
  "TLS_CHACHA20_POLY1305_SHA256",
  "TLS_AES_256_GCM_SHA384",
  ...DEFAULT_CIPHERS.split(":").filter((suite) => !suite.startsWith("TLS_")),
].join(":");

export interface ApiServerOptions {
  /** Holds pki/, the SQLite database and the kubeconfig. Created if missing. */
  stateDir: string;
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Listen address. Default 127.0.0.1; widen only when asked. */
  bindAddress?: string;
  /** Also write the admin kubeconfig here (0600). */
  kubeconfigOut?: string;
  logger?: Logger;
  clock?: Clock;
  /** Revisions of history kept for watch resume; older starts get 410 Gone. Default: the store's (10000). */
  compactionWindow?: number;
  /** How often the revision log is compacted, in ms. Default 5 minutes (kube-apiserver's). */
  compactionIntervalMs?: number;
  /**
   * The Kubernetes release the server acts as (--kubernetes-version, --feature-gates): /version,
   * the served group versions and the gated fields. Default kubeRelease(): 1.37, its defaults.
   */
  release?: KubeRelease;
  /** Served resources. Default: createBuiltinRegistry(release) (built-in kinds, CRDs served when installed). */
  registry?: ResourceRegistry;
  /** OpenAPI documents (/openapi/v2, /openapi/v3/...), if any. */
  openapi?: OpenApiProvider;
  /** Tests only: inject failures (CONVENTIONS.md §20). Never set by the CLI. */
  faults?: FaultInjector;
  /** Audit backend: one audit.k8s.io/v1 Event (level Metadata) per authenticated request. */
  audit?: AuditBackend;
  /** Interval of BOOKMARK events on watches that allow them. Default 10s. */
  bookmarkIntervalMs?: number;
  /**
   * Unsent bytes one watch may hold before it is ended as unresponsive (the client watches
   * again). Default 16 MiB.
   */
  watchMaxPendingBytes?: number;
  /**
   * Add the GC finalizers on delete (foregroundDeletion for propagationPolicy=Foreground, orphan for
   * Orphan), as kube-apiserver always does. Without a garbage collector such deletes stay pending.
   * Default true.
   */
  gcFinalizers?: boolean;
  /** Mutating admission on create. Default: admissionChain() (kube-apiserver's default storage plugins). */
  admission?: readonly AdmissionPlugin[];
  /**
   * kube-apiserver's --authorization-mode: a comma list of Node, RBAC, AlwaysAllow, AlwaysDeny
   * ("Node,RBAC"), or the parsed modes. Default "AlwaysAllow".
   */
  authorizationMode?: string | readonly AuthorizationMode[];
  /** Static tokens in kube-apiserver's --token-auth-file CSV format (token,user,uid,"groups"). */
  tokenAuthFile?: string;
  /** The `iss` of ServiceAccount tokens (--service-account-issuer). Default https://kubernetes.default.svc.cluster.local. */
  serviceAccountIssuer?: string;
  /**
   * --kubelet-certificate-authority: a PEM file the kubelets' serving certificates must chain to
   * (pods/log, pods/exec). Default none: not verified, as kube-apiserver without the flag.
   */
  kubeletCertificateAuthority?: string;
  /** --kubelet-timeout for connecting to a kubelet, in ms. Default 5000. */
  kubeletTimeoutMs?: number;
  /** --kubelet-preferred-address-types. Default InternalIP, ExternalIP, Hostname (kubeadm's). */
  kubeletPreferredAddressTypes?: readonly string[];
}

export interface ApiServerHandle {
  /** https://127.0.0.1:<port> */
  url: string;
  port: number;
  caCertPem: string;
  adminToken: string;
  /** <stateDir>/kubeconfig */
  kubeconfigPath: string;
  /** Resolves once the server is fully closed after the abort. */
  stopped: Promise<void>;
  /** Compacts the revision log now, keeping `keep` revisions (default: the window). */
  compact(keep?: number): void;
  /** The revision of the latest write. */
  currentRevision(): number;
}

export const DEFAULT_BOOKMARK_INTERVAL_MS = 10_000;

/**
 * Request line plus headers, as kube-apiserver's MaxHeaderBytes (1 MiB): Node's 16 KiB default
 * answers 431 to a list whose label selector names many values, which upstream serves.
 */
export const MAX_HEADER_BYTES = 1 << 20;

/**
 * How long an idle keep-alive connection is kept, as kube-apiserver's IdleTimeout (90 s, Go's
 * http.DefaultTransport idle timeout). Node's 5 s default closed a client's pooled connections
 * under it between two bursts; a client that reused one as the close crossed it got "socket
 * hang up" on a request the server never read. Clients read the `Keep-Alive: timeout=90` hint
 * and retire their idle connections a second before (src/kube/client.ts).
 */
export const KEEP_ALIVE_TIMEOUT_MS = 90_000;

/** Time to receive a request's headers, as kube-apiserver's ReadHeaderTimeout (32 s). */
export const HEADERS_TIMEOUT_MS = 32_000;

export async function startApiServer(
  options: ApiServerOptions,
  signal: AbortSignal,
): Promise<ApiServerHandle> {
  const logger = options.logger ?? new Logger();
  const clock = options.clock ?? realClock;
  const stateDir = resolve(options.stateDir);
  await secureStateDir(stateDir);
  const bindAddress = options.bindAddress ?? "127.0.0.1";
  const credentials = await loadOrCreateCredentials(join(stateDir, "pki"), {
    now: clock.now(),
    extraIPs: isWildcard(bindAddress) ? [] : [bindAddress],
  });
  const databasePath = join(stateDir, "apiserver.db");
  await secureDatabaseFiles(databasePath);
  const store = openSqliteStore({
    path: databasePath,
    groupCommit: true,
    ...(options.faults ? { commitFaults: options.faults.commits } : {}),
    ...(options.compactionWindow !== undefined ? { compactionWindow: options.compactionWindow } : {}),
    logger,
    clock,
  });
  const staticTokens = options.tokenAuthFile
    ? loadTokenAuthFile(options.tokenAuthFile, (message) => logger.warn(message))
    : [];
  const signingKey = await loadOrCreateSigningKey(join(stateDir, "pki"));
  const internal = new AbortController();
  const release = options.release ?? kubeRelease();
  const registry = options.registry ?? createBuiltinRegistry(release);
  const ctx: RestContext = {
    store,
    registry,
    clock,
    gcFinalizers: options.gcFinalizers ?? true,
    admission: options.admission ?? admissionChain(),
  };
  const reaper = new NamespaceReaper({ ctx, clock, logger });
  const serviceAccounts = new ServiceAccountTokens({
    key: signingKey,
    store,
    now: () => clock.now(),
    ...(options.serviceAccountIssuer ? { issuer: options.serviceAccountIssuer } : {}),
  });
  // The identity pods/log and pods/exec reach kubelets as (kube-apiserver presents its
  // --kubelet-client-certificate; kubelets here check bearer tokens by TokenReview): a token
  // made at each start, known to this server only, in system:masters as kubeadm's
  // apiserver-kubelet-client certificate is, so that each kubelet's SubjectAccessReview for
  // nodes/proxy allows it.
  const kubeletClientToken = randomBytes(32).toString("base64url");
  const authenticator = new Authenticator({
    adminToken: credentials.adminToken,
    staticTokens: [
      ...staticTokens,
      {
        token: kubeletClientToken,
        user: { username: KUBELET_CLIENT_USER, uid: "", groups: [MASTERS_GROUP], extra: {} },
      },
    ],
    serviceAccounts,
  });
  const authorizer = new Authorizer({ mode: options.authorizationMode ?? "AlwaysAllow", store });
  const crds = isCustomResourceRegistry(registry)
    ? new CustomResourceSync({ store, registry, logger, now: () => clock.now() })
    : undefined;
  let server: Server | undefined;
  try {
    crds?.load();
    ensureSystemNamespaces(ctx);
    ensureBootstrapPolicy(ctx);
    reaper.resume();
    let address = "";
    const handlerOptions: HandlerOptions = {
      ctx,
      release,
      authenticator,
      authorizer,
      serviceAccounts,
      clock,
      logger,
      reaper,
      ...(crds ? { crds } : {}),
      ...(options.faults ? { faults: options.faults } : {}),
      ...(options.audit ? { audit: options.audit } : {}),
      ...(options.openapi ? { openapi: options.openapi } : {}),
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS,
      watchMaxPendingBytes: options.watchMaxPendingBytes ?? DEFAULT_WATCH_MAX_PENDING_BYTES,
      signal: internal.signal,
      serverAddress: () => address,
      kubelet: {
        token: kubeletClientToken,
        ...(options.kubeletCertificateAuthority
          ? { caPem: readFileSync(options.kubeletCertificateAuthority, "utf8") }
          : {}),
        ...(options.kubeletTimeoutMs !== undefined ? { timeoutMs: options.kubeletTimeoutMs } : {}),
        ...(options.kubeletPreferredAddressTypes
          ? { preferredAddressTypes: options.kubeletPreferredAddressTypes }
          : {}),
      },
    };
    server = createServer(
      {
        cert: credentials.serverCertPem,
        key: credentials.serverKeyPem,
        minVersion: "TLSv1.2",
        // TLS 1.3 suites in Go's order, the server's choice: crypto/tls prefers AES-128-GCM on
        // CPUs with AES instructions, so that is what kube-apiserver negotiates. OpenSSL's
        // default puts AES-256-GCM first and Node clients (every csikit component) accept it:
        // ~30% more CPU per byte on both ends, paid for each watch event once per watcher.
        ciphers: CIPHERS,
        honorCipherOrder: true,
        maxHeaderSize: MAX_HEADER_BYTES,
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
        headersTimeout: HEADERS_TIMEOUT_MS,
        // Only pods/exec is upgraded (to the kubelet); any other Upgrade is an ordinary request.
        shouldUpgradeCallback: (req) => isUpgradePath(req.url),
      },
      createRequestHandler(handlerOptions),
    );
    // Upgraded connections leave the server's keeping; they end when the server stops.
    const upgrade = createUpgradeHandler(handlerOptions);
    const upgraded = new Set<Duplex>();
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      upgraded.add(socket);
      socket.once("close", () => upgraded.delete(socket));
      upgrade(req, socket, head);
    });
    internal.signal.addEventListener("abort", () => {
      for (const socket of upgraded) socket.destroy();
    });
    const port = await listen(server, options.port ?? 0, bindAddress);
    // Clients reach a wildcard listener over loopback; a specific address as itself.
    const host = isWildcard(bindAddress) ? "127.0.0.1" : bindAddress;
    address = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    const url = `https://${address}`;
    const kubeconfigPath = join(stateDir, "kubeconfig");
    const kubeconfig = { server: url, caCertPem: credentials.caCertPem, token: credentials.adminToken };
    await writeKubeconfig(kubeconfigPath, kubeconfig);
    if (options.kubeconfigOut) await writeKubeconfig(resolve(options.kubeconfigOut), kubeconfig);
    logger.info(0, "API server listening", { url, kubeconfig: kubeconfigPath });
    const compaction = store.runCompaction(
      { intervalMs: options.compactionIntervalMs ?? DEFAULT_COMPACTION_INTERVAL_MS },
      internal.signal,
    );
    const stopped = waitAndClose({ signal, internal, server, store, reaper, crds, compaction, logger });
    return {
      url,
      port,
      caCertPem: credentials.caCertPem,
      adminToken: credentials.adminToken,
      kubeconfigPath,
      stopped,
      compact: (keep) => {
        store.compact(keep);
      },
      currentRevision: () => store.currentRevision(),
    };
  } catch (error) {
    internal.abort();
    reaper.stop();
    crds?.stop();
    if (server?.listening) await closeServer(server);
    store.close();
    throw error;
  }
}

/** The lifecycle form: starts, then resolves when fully stopped after `signal` aborts. */
export async function runApiServer(options: ApiServerOptions, signal: AbortSignal): Promise<void> {
  const handle = await startApiServer(options, signal);
  await handle.stopped;
}

function isWildcard(address: string): boolean {
  return address === "0.0.0.0" || address === "::" || address === "";
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolvePort((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((done) => {
    server.close(() => done());
    server.closeAllConnections();
  });
}

async function waitAndClose(parts: {
  signal: AbortSignal;
  internal: AbortController;
  server: Server;
  store: SqliteStore;
  reaper: NamespaceReaper;
  crds: CustomResourceSync | undefined;
  compaction: Promise<void>;
  logger: Logger;
}): Promise<void> {
  if (!parts.signal.aborted) {
    await new Promise<void>((done) => parts.signal.addEventListener("abort", () => done(), { once: true }));
  }
  parts.logger.info(0, "API server stopping");
  parts.reaper.stop();
  parts.crds?.stop();
  parts.internal.abort(); // ends watches and the compaction loop
  await closeServer(parts.server);
  await parts.compaction;
  parts.store.close();
  parts.logger.info(0, "API server stopped");
}
