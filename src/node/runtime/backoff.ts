// The kubelet's crash-loop back-off (client-go flowcontrol.Backoff as the kubelet sets it up):
// per container, 10s doubling to 5m; an entry untouched for twice the maximum (10 minutes,
// e.g. a container that ran that long) starts again at 10s. A container whose last exit is
// still within its back-off waits in CrashLoopBackOff; otherwise it restarts at once and the
// back-off grows for the next exit.

export const INITIAL_BACKOFF_MS = 10_000;
export const MAX_BACKOFF_MS = 300_000;

interface Entry {
  backoffMs: number;
  lastUpdate: number;
}

export class CrashLoopBackoff {
  readonly #entries = new Map<string, Entry>();
  readonly #initial: number;
  readonly #max: number;

  constructor(initialMs = INITIAL_BACKOFF_MS, maxMs = MAX_BACKOFF_MS) {
    this.#initial = initialMs;
    this.#max = maxMs;
  }

  #expired(eventTime: number, entry: Entry): boolean {
    return eventTime - entry.lastUpdate > this.#max * 2;
  }

  /** Remaining wait (ms) before a container that finished at finishedAt may restart; 0 = now. */
  remaining(key: string, finishedAt: number, now: number): number {
    const entry = this.#entries.get(key);
    if (!entry || this.#expired(finishedAt, entry)) return 0;
    return Math.max(0, entry.backoffMs - (now - finishedAt));
  }

  /** The current back-off of key (for the CrashLoopBackOff message). */
  current(key: string): number {
    return this.#entries.get(key)?.backoffMs ?? 0;
  }

  /** Records a restart of a container that finished at finishedAt. */
  next(key: string, finishedAt: number, now: number): void {
    const entry = this.#entries.get(key);
    if (!entry || this.#expired(finishedAt, entry))
      this.#entries.set(key, { backoffMs: this.#initial, lastUpdate: now });
    else this.#entries.set(key, { backoffMs: Math.min(entry.backoffMs * 2, this.#max), lastUpdate: now });
  }

  forgetPod(prefix: string): void {
    for (const key of this.#entries.keys()) if (key.startsWith(prefix)) this.#entries.delete(key);
  }
}

/** Go's time.Duration String() for whole seconds/minutes as the message shows them ("10s", "2m40s", "5m0s"). */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const total = ms / 1000;
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  const s = `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, "")}s`;
  if (hours > 0) return `${hours}h${minutes}m${s}`;
  if (minutes > 0) return `${minutes}m${s}`;
  return s;
}
