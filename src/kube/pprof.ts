// --enable-pprof, Node's equivalent of Go's net/http/pprof on the diagnostics endpoint:
//   /debug/pprof/                 index of the profiles
//   /debug/pprof/heap             a V8 heap snapshot (.heapsnapshot JSON, open in Chrome DevTools)
//   /debug/pprof/profile?seconds= a CPU profile over N seconds (default 30, max 300; .cpuprofile)
// Profiles come from node:v8 and node:inspector in-process; nothing is written to disk.

import { getHeapSnapshot } from "node:v8";
import type { RouteHandler } from "./http-endpoint.ts";

const INDEX = `<html><body><p>/debug/pprof/</p><ul>
<li><a href="heap">heap</a>: V8 heap snapshot (.heapsnapshot)</li>
<li><a href="profile?seconds=30">profile</a>: CPU profile (.cpuprofile), ?seconds=N</li>
</ul></body></html>
`;

async function heap(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of getHeapSnapshot()) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

async function cpuProfile(ms: number): Promise<string> {
  // Loaded on the first profile request: most processes never take one.
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
    await new Promise((resolve) => setTimeout(resolve, ms));
    const { profile } = await session.post("Profiler.stop");
    return JSON.stringify(profile);
  } finally {
    session.disconnect();
  }
}

export const PPROF_PREFIX = "/debug/pprof/";

export const pprofRoute: RouteHandler = async (url) => {
  const what = url.pathname.slice(PPROF_PREFIX.length);
  if (what === "") return { body: INDEX, contentType: "text/html; charset=utf-8" };
  if (what === "heap") return { body: await heap(), contentType: "application/json" };
  if (what === "profile") {
    const seconds = Number(url.searchParams.get("seconds") ?? "30");
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 300)
      return { status: 400, body: "seconds must be in (0, 300]\n" };
    return { body: await cpuProfile(seconds * 1000), contentType: "application/json" };
  }
  return { status: 404, body: `unknown profile ${JSON.stringify(what)}\n` };
};
