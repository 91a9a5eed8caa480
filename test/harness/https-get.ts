// A GET of a component's metrics or health endpoint, as Prometheus or a probe would make it:
// HTTP or HTTPS by the URL, an optional bearer token, the self-signed serving certificates of the
// secure ports not verified (they are made in memory at start), bounded by a timeout.

import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

export function scrape(url: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const secure = url.startsWith("https:");
    const options = {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      timeout: 30_000,
      ...(secure ? { rejectUnauthorized: false } : {}),
    };
    const req = (secure ? httpsRequest : httpRequest)(url, options, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on("error", reject);
    req.end();
  });
}
