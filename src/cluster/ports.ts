// Ports for the servers of one `csikit up` cluster. `up` picks them before it starts the
// processes that bind them, seconds later, and a restarted process binds the same one again.
// A port from the kernel's ephemeral range (bind to 0) is the wrong pick: any outgoing
// connection on the machine may take it in between, and the component then fails to bind on
// every restart. So ports come from below that range, where the kernel never hands out one on
// its own, from a random start (two clusters starting at once rarely meet), each checked free.

import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { CsikitError } from "../base/index.ts";

/** Lowest port `up` uses: clear of the well-known and registered ports most services take. */
const LOWEST = 20_000;
/** Linux's default ip_local_port_range starts here; used where /proc cannot be read. */
const DEFAULT_EPHEMERAL_START = 32_768;

/** The first port of the kernel's ephemeral range (Linux: net.ipv4.ip_local_port_range). */
export function ephemeralRangeStart(
  read: () => string = () => readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8"),
): number {
  try {
    const low = Number(read().trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 1024 ? low : DEFAULT_EPHEMERAL_START;
  } catch {
    return DEFAULT_EPHEMERAL_START;
  }
}

/** True when 127.0.0.1:port can be bound now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Hands out distinct free ports below the ephemeral range, walking up from a random start. */
export class PortPicker {
  readonly #taken = new Set<number>();
  readonly #low: number;
  readonly #high: number;
  #next: number;

  constructor(options: { low?: number; high?: number; random?: () => number } = {}) {
    this.#low = options.low ?? LOWEST;
    this.#high = options.high ?? ephemeralRangeStart() - 1;
    if (this.#high < this.#low)
      // A machine whose ephemeral range covers everything: fall back to the whole user range.
      this.#high = 65_535;
    const span = this.#high - this.#low + 1;
    this.#next = this.#low + Math.floor((options.random ?? Math.random)() * span);
  }

  /** The next free port; throws when every port of the range is bound. */
  async next(): Promise<number> {
    const span = this.#high - this.#low + 1;
    for (let tried = 0; tried < span; tried += 1) {
      const port = this.#next;
      this.#next = port >= this.#high ? this.#low : port + 1;
      if (this.#taken.has(port)) continue;
      if (await portIsFree(port)) {
        this.#taken.add(port);
        return port;
      }
    }
    throw new CsikitError(
      "CSIKIT_ERR_NO_PORT",
      `no free TCP port on 127.0.0.1 between ${this.#low} and ${this.#high}`,
    );
  }
}

const shared = new PortPicker();

/**
 * A free TCP port on 127.0.0.1 for a server started later (by this process or a child): one
 * no outgoing connection can take in the meantime, and never one this process handed out before.
 */
export function freePort(): Promise<number> {
  return shared.next();
}
