// Request priority for the client-side rate limiter (TokenBucket.acquire). A controller runs a
// piece of work under `withRequestPriority(priority, fn)`; every request the client sends from
// inside it (awaits included: AsyncLocalStorage follows the async context) waits in the
// limiter's line at that priority. Outside any, requests run at REQUEST_PRIORITY.normal.
// Priority never raises the rate (--kube-api-qps/--kube-api-burst stay the bound); it only
// decides who gets the next token when several requests wait.

import { AsyncLocalStorage } from "node:async_hooks";

export const REQUEST_PRIORITY = {
  /** Writes a user waits on that finish work already started (the provisioner's PV create). */
  completion: 2,
  /** Default: reads, and writes that start new work. */
  normal: 1,
  /** Writes nothing waits on (events, clean-up such as the in-flight unmark). */
  trailing: 0,
} as const;

const current = new AsyncLocalStorage<number>();

/** Runs `fn` with every client request inside it waiting at `priority`. */
export function withRequestPriority<T>(priority: number, fn: () => T): T {
  return current.run(priority, fn);
}

/** The priority of the calling async context (REQUEST_PRIORITY.normal outside any). */
export function requestPriority(): number {
  return current.getStore() ?? REQUEST_PRIORITY.normal;
}
