// The kubelet's plugin watcher: finds registration sockets in <root>/plugins_registry/ and
// reports them appearing, being replaced (a new file: inode and creation time) and disappearing. fs.watch triggers a
// scan at once; a scan at start and a periodic rescan are the safety net for events fs.watch
// drops. Files starting with "." and anything that is not a socket are ignored. Calls for one
// path never overlap, and a path is reported removed only after it was reported added.

import { watch, type FSWatcher } from "node:fs";
import { lstat, mkdir, readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, isErrno, type Clock, type Logger } from "../base/index.ts";

export interface PluginSocketHandler {
  added(socketPath: string, signal: AbortSignal): Promise<void>;
  removed(socketPath: string, signal: AbortSignal): Promise<void>;
}

export interface PluginWatcherOptions {
  dir: string;
  handler: PluginSocketHandler;
  rescanIntervalMs: number;
  clock: Clock;
  logger: Logger;
}

export class PluginWatcher {
  readonly #options: PluginWatcherOptions;
  /** Sockets reported added: path → inode identity. */
  readonly #known = new Map<string, string>();
  #scanning: Promise<void> | undefined;
  #again = false;
  /** The watched dir by its real path (set by run). */
  #dir: string;

  constructor(options: PluginWatcherOptions) {
    this.#options = options;
    this.#dir = options.dir;
  }

  /** Watches until the signal aborts; resolves after the last handler call finished. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, rescanIntervalMs, logger } = this.#options;
    await mkdir(this.#options.dir, { recursive: true, mode: 0o750 });
    // The dir may be a link to a shorter path (`up` with a deep state dir): sockets are
    // addressed by the real one, as a socket path has at most 107 bytes.
    const dir = await realpath(this.#options.dir);
    this.#dir = dir;
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(dir, { persistent: false }, () => this.#scan(signal));
      watcher.on("error", (error) =>
        logger.warn("plugin watcher: fs.watch failed", { err: errorMessage(error) }),
      );
    } catch (error) {
      logger.warn("plugin watcher: fs.watch unavailable, rescanning only", { err: errorMessage(error) });
    }
    try {
      await this.#scan(signal);
      while (!signal.aborted) {
        await clock.sleep(rescanIntervalMs, signal).catch(() => undefined);
        if (!signal.aborted) await this.#scan(signal);
      }
    } finally {
      watcher?.close();
      await this.#scanning;
    }
  }

  /** One scan at a time; a request during a scan runs one more after it. */
  #scan(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    if (this.#scanning) {
      this.#again = true;
      return this.#scanning;
    }
    this.#scanning = (async () => {
      try {
        do {
          this.#again = false;
          await this.#scanOnce(signal);
        } while (this.#again && !signal.aborted);
      } finally {
        this.#scanning = undefined;
      }
    })();
    return this.#scanning;
  }

  async #scanOnce(signal: AbortSignal): Promise<void> {
    const { handler, logger } = this.#options;
    const dir = this.#dir;
    const found = new Map<string, string>();
    let names: string[] = [];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (!isErrno(error, "ENOENT"))
        logger.warn("plugin watcher: cannot read dir", { dir, err: errorMessage(error) });
    }
    for (const name of names) {
      if (name.startsWith(".")) continue;
      const path = join(dir, name);
      try {
        const stats = await lstat(path, { bigint: true });
        // The inode alone is not an identity: a registrar restarted at once often gets the freed
        // inode number back, and both fs events may arrive as one scan. The creation time
        // (ctime where the file system has no birth time) tells the new socket apart.
        const born = stats.birthtimeNs > 0n ? stats.birthtimeNs : stats.ctimeNs;
        if (stats.isSocket()) found.set(path, `${stats.dev}:${stats.ino}:${born}`);
      } catch {
        // Gone between readdir and lstat: the next scan sees it missing.
      }
    }
    for (const [path, identity] of this.#known) {
      if (found.get(path) === identity) continue;
      try {
        await handler.removed(path, signal);
        this.#known.delete(path);
      } catch (error) {
        // Still known, so the next scan (an fs event or the periodic rescan) tries again: a
        // failed CSINode write must not leave a gone driver registered for good.
        logger.error("plugin deregistration failed, retrying at the next scan", {
          path,
          err: errorMessage(error),
        });
      }
    }
    for (const [path, identity] of found) {
      if (this.#known.has(path) || signal.aborted) continue;
      this.#known.set(path, identity);
      try {
        await handler.added(path, signal);
      } catch (error) {
        // Forget it so the next scan tries again, as the kubelet retries a failed registration.
        this.#known.delete(path);
        logger.error("plugin registration failed", { path, err: errorMessage(error) });
      }
    }
  }
}
