// The secure port of a control-plane component or a kubelet: HTTPS with the certificate given
// (--tls-cert-file / --tls-private-key-file) or a self-signed one made at start, /metrics and
// /healthz behind delegated authentication and authorization (TokenReview and
// SubjectAccessReview against the API server), the health paths always allowed. This is where
// Prometheus scrapes kube-controller-manager (10257) and the kubelet (10250) upstream, with the
// same flags; csikit binds loopback unless told otherwise.

import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { FlagError, type FlagSpecs, type Flags, type Logger } from "../base/index.ts";
import type { KubeClient } from "./client.ts";
import { delegatedAuthorizer, type AccessAttributes } from "./delegated-auth.ts";
import { startHttpEndpoint, type HealthCheck, type HttpEndpoint } from "./http-endpoint.ts";
import type { Registry } from "./prom.ts";
import { selfSignedServingCert } from "./serving-cert.ts";

/** The TLS flags both upstream twins share. */
export const TLS_SERVING_FLAGS: FlagSpecs = {
  "tls-cert-file": {
    type: "string",
    help: "File containing the default x509 Certificate for HTTPS. If not provided, a self-signed certificate is generated in memory at start.",
  },
  "tls-private-key-file": {
    type: "string",
    help: "File containing the default x509 private key matching --tls-cert-file.",
  },
};

export interface SecureServingOptions {
  /** "" or "0.0.0.0" means all interfaces; csikit's default is loopback. */
  bindAddress: string;
  /** 0: no secure port. */
  port: number;
  certFile: string;
  keyFile: string;
  alwaysAllowPaths: readonly string[];
  /** undefined: no authentication or authorization (the kubelet's AlwaysAllow). */
  auth?: { client: KubeClient; attributes: (method: string, url: URL) => AccessAttributes };
  registry: Registry;
  healthChecks?: Record<string, HealthCheck>;
  /** The name in the self-signed certificate. */
  host: string;
  /** Further paths, any method (the kubelet's /containerLogs); see HttpEndpointOptions. */
  handler?: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>;
  /** Upgraded connections (the kubelet's /exec); see HttpEndpointOptions. */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => void;
  logger: Logger;
}

/** Reads the --tls-* pair, both or neither. */
async function tlsOf(options: SecureServingOptions): Promise<{ certPem: string; keyPem: string }> {
  if ((options.certFile === "") !== (options.keyFile === ""))
    throw new FlagError("--tls-cert-file and --tls-private-key-file must be given together");
  if (options.certFile !== "")
    return {
      certPem: await readFile(options.certFile, "utf8"),
      keyPem: await readFile(options.keyFile, "utf8"),
    };
  return selfSignedServingCert(options.host, Date.now());
}

/** Starts the secure port, or returns undefined when port is 0. */
export async function startSecureServing(
  options: SecureServingOptions,
  signal: AbortSignal,
): Promise<HttpEndpoint | undefined> {
  if (options.port === 0) return undefined;
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535)
    throw new FlagError(`invalid port ${options.port}: want 0-65535`);
  const host = options.bindAddress === "0.0.0.0" ? "" : options.bindAddress;
  const address = host.includes(":") ? `[${host}]:${options.port}` : `${host}:${options.port}`;
  return startHttpEndpoint(
    {
      address,
      registry: options.registry,
      healthChecks: options.healthChecks ?? {},
      tls: await tlsOf(options),
      ...(options.auth
        ? {
            authorize: delegatedAuthorizer({
              client: options.auth.client,
              alwaysAllowPaths: options.alwaysAllowPaths,
              attributes: options.auth.attributes,
              logger: options.logger,
            }),
          }
        : {}),
      ...(options.handler ? { handler: options.handler } : {}),
      ...(options.upgrade ? { upgrade: options.upgrade } : {}),
      logger: options.logger,
    },
    signal,
  );
}

/** --authorization-always-allow-paths, validated as upstream: each path starts with "/". */
export function alwaysAllowPaths(flags: Flags, name = "authorization-always-allow-paths"): string[] {
  const paths = flags.strings(name).filter((path) => path !== "");
  for (const path of paths)
    if (!path.startsWith("/"))
      throw new FlagError(
        `invalid value ${JSON.stringify(path)} for flag -${name}: a path must start with "/"`,
      );
  return paths;
}
