// Test support for the API server's own tests: a server on port 0 over a temp state directory
// (removed afterwards) and a raw HTTPS client that trusts the generated CA (kubectl runs are
// kubectl.ts's, with handle.kubeconfigPath).

import { request as httpsRequest } from "node:https";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../src/base/index.ts";
import {
  createBuiltinRegistry,
  startApiServer,
  type ApiServerHandle,
  type ApiServerOptions,
} from "../../src/apiserver/index.ts";

export interface TestServer {
  handle: ApiServerHandle;
  stateDir: string;
  /** Stops the server (resolves when fully stopped); the state directory stays. */
  stop(): Promise<void>;
  /** Starts a new server on the same state directory (after stop). */
  restart(): Promise<TestServer>;
  /** Stops the server and removes the state directory. */
  dispose(): Promise<void>;
}

export async function startTestServer(
  overrides: Partial<Omit<ApiServerOptions, "stateDir">> = {},
  stateDir?: string,
): Promise<TestServer> {
  const dir = stateDir ?? (await mkdtemp(join(tmpdir(), "csikit-apiserver-")));
  const controller = new AbortController();
  let handle: ApiServerHandle;
  try {
    handle = await startApiServer(
      {
        stateDir: dir,
        port: 0,
        registry: createBuiltinRegistry(overrides.release),
        logger: silentLogger,
        ...overrides,
      },
      controller.signal,
    );
  } catch (error) {
    if (!stateDir) await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const stop = async (): Promise<void> => {
    controller.abort();
    await handle.stopped;
  };
  return {
    handle,
    stateDir: dir,
    stop,
    restart: () => startTestServer(overrides, dir),
    dispose: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body as received (protobuf answers are binary). */
  bytes: Buffer;
  json(): Record<string, unknown> & { message?: string; reason?: string; code?: number };
}

export interface RawRequest {
  method?: string;
  path: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Default: the admin token. null = no Authorization header. */
  token?: string | null;
}

/** One HTTPS request to the server, trusting its CA. */
export function raw(handle: ApiServerHandle, options: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    const token = options.token === undefined ? handle.adminToken : options.token;
    if (token !== null) headers.Authorization = `Bearer ${token}`;
    if (options.body !== undefined) {
      headers["Content-Type"] ??= "application/json";
      // Node sends DELETE bodies without framing unless the length is given.
      headers["Content-Length"] = String(Buffer.byteLength(options.body));
    }
    const req = httpsRequest(
      `${handle.url}${options.path}`,
      { method: options.method ?? "GET", headers, ca: handle.caCertPem },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const bytes = Buffer.concat(chunks);
          const text = bytes.toString("utf8");
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            bytes,
            json: () => JSON.parse(text) as RawResponse["json"] extends () => infer T ? T : never,
          });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}
