// A minimal HTTPS client for the benchmark: keep-alive sockets (bounded), bearer token, the
// server's CA, whole-body responses. It is the floor a Kubernetes client cannot go below, so
// the @kubernetes/client-node rows can be read against it.

import { Agent, request } from "node:https";

export interface RawClientOptions {
  url: string;
  caCertPem: string;
  token: string;
  /** Sockets kept open to the server; requests beyond it queue in the agent. */
  maxSockets: number;
}

export interface RawResponse {
  status: number;
  text: string;
}

export class HttpStatusError extends Error {
  readonly status: number;
  constructor(method: string, path: string, status: number, text: string) {
    super(`${method} ${path}: HTTP ${status}: ${text.slice(0, 300)}`);
    this.status = status;
  }
}

export class RawClient {
  readonly url: string;
  readonly #agent: Agent;
  readonly #token: string;
  readonly #ca: string;

  constructor(options: RawClientOptions) {
    this.url = options.url;
    this.#token = options.token;
    this.#ca = options.caCertPem;
    this.#agent = new Agent({ keepAlive: true, maxSockets: options.maxSockets, ca: options.caCertPem });
  }

  /** One request; rejects on a transport error or a status outside 2xx. */
  async send(method: string, path: string, body?: unknown, contentType?: string): Promise<RawResponse> {
    const response = await this.sendRaw(method, path, body, contentType);
    if (response.status < 200 || response.status > 299) {
      throw new HttpStatusError(method, path, response.status, response.text);
    }
    return response;
  }

  /** One request; resolves with any status. */
  sendRaw(method: string, path: string, body?: unknown, contentType?: string): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string> = {
        Accept: "application/json",
        Authorization: `Bearer ${this.#token}`,
      };
      if (payload !== undefined) {
        headers["Content-Type"] = contentType ?? "application/json";
        headers["Content-Length"] = String(Buffer.byteLength(payload));
      }
      const req = request(`${this.url}${path}`, { method, headers, agent: this.#agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(payload);
    });
  }

  /**
   * One request with an encoded body and an explicit Accept (the protobuf rows); rejects on a
   * status outside 2xx. The answer is returned as bytes, undecoded.
   */
  sendBytes(
    method: string,
    path: string,
    accept: string,
    body?: { bytes: Buffer; contentType: string },
  ): Promise<{ status: number; bytes: Buffer }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { Accept: accept, Authorization: `Bearer ${this.#token}` };
      if (body) {
        headers["Content-Type"] = body.contentType;
        headers["Content-Length"] = String(body.bytes.length);
      }
      const req = request(`${this.url}${path}`, { method, headers, agent: this.#agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const bytes = Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299)
            reject(new HttpStatusError(method, path, status, bytes.toString()));
          else resolve({ status, bytes });
        });
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body?.bytes);
    });
  }

  /** Options for a long-lived streaming request outside the bounded agent (watches). */
  streamOptions(): { headers: Record<string, string>; ca: string; agent: false } {
    return {
      headers: { Accept: "application/json", Authorization: `Bearer ${this.#token}` },
      ca: this.#ca,
      agent: false,
    };
  }

  close(): void {
    this.#agent.destroy();
  }
}
