// The registration socket, `<plugin-registration-path>/<driver>-reg.sock`, served so that no
// other user can ever connect to it. Upstream binds under umask 0077; csikit may share its
// process with other components (`csikit up`), where changing the process-wide umask would
// leak into their files. So the socket is bound inside a fresh 0700 directory (named with a
// leading "." so plugin watchers ignore it), chmod 0600, and only then renamed into place: it
// appears in the registry directory already private, and the rename is one create event for
// watchers (inotify IN_MOVED_TO, which fsnotify and fs.watch report like a create).
//
// Invariants:
// - A stale socket at the final path (an earlier registrar killed with -9) is replaced; a
//   socket that a live process still serves, or anything that is not a socket, is left alone
//   and serving fails naming the path (two registrars for one driver is a misconfiguration).
// - close() removes the socket only while it is still ours (same inode): a newer registrar
//   that replaced it keeps its registration.

import { lstat, mkdir, mkdtemp, rename, rm, stat, unlink } from "node:fs/promises";
import { connect } from "node:net";
import { basename, dirname, join } from "node:path";
import { CsikitError, errorMessage, isErrno, silentLogger, type Logger } from "../../base/index.ts";
import { serveCsi, type RegistrationService } from "../../csi/index.ts";

export interface RegistrationSocket {
  readonly path: string;
  /** Stops serving and removes the socket (which deregisters the driver). Idempotent. */
  close(): Promise<void>;
}

/** The registration socket's path for a driver, as upstream builds it. */
export function registrationSocketPath(pluginRegistrationPath: string, driverName: string): string {
  return join(pluginRegistrationPath, `${driverName}-reg.sock`);
}

export async function serveRegistrationSocket(options: {
  path: string;
  service: RegistrationService;
  logger?: Logger;
}): Promise<RegistrationSocket> {
  const { path } = options;
  const logger = options.logger ?? silentLogger;
  await mkdir(dirname(path), { recursive: true });
  await refuseUnlessStale(path);
  const privateDir = await mkdtemp(join(dirname(path), ".csikit-reg-"));
  let identity: string;
  let server;
  try {
    server = await serveCsi({
      endpoint: join(privateDir, basename(path)),
      registration: options.service,
      socketMode: 0o600,
      logger,
      shutdownGraceMs: 1000,
    });
    await rename(server.path, path);
    identity = inodeOf(await stat(path));
  } catch (error) {
    await server?.close();
    await rm(privateDir, { recursive: true, force: true });
    throw new CsikitError(
      "CSIKIT_ERR_SOCKET",
      `cannot serve the registration socket ${path}: ${errorMessage(error)}`,
      {
        cause: error,
      },
    );
  }
  await rm(privateDir, { recursive: true, force: true });
  const grpcServer = server;
  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    // Remove first: the kubelet deregisters on the socket's removal, and no new connection may
    // reach a server that is going away.
    try {
      if (inodeOf(await lstat(path)) === identity) await unlink(path);
    } catch (error) {
      if (!isErrno(error, "ENOENT"))
        logger.error("cannot remove the registration socket", { socket: path, err: errorMessage(error) });
    }
    await grpcServer.close();
  };
  return {
    path,
    close: () => (closing ??= close()),
  };
}

function inodeOf(stats: { dev: number; ino: number }): string {
  return `${stats.dev}:${stats.ino}`;
}

/** Removes a stale socket at `path`; throws if something live or not a socket is there. */
async function refuseUnlessStale(path: string): Promise<void> {
  let stats;
  try {
    stats = await lstat(path);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return;
    throw error;
  }
  if (!stats.isSocket())
    throw new CsikitError(
      "CSIKIT_ERR_SOCKET",
      `cannot serve on ${path}: it exists and is not a socket (refusing to delete it)`,
    );
  if (await accepts(path))
    throw new CsikitError("CSIKIT_ERR_SOCKET", `cannot serve on ${path}: another process is serving on it`);
  await unlink(path);
}

function accepts(path: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => {
      socket.destroy();
      resolve(false);
    });
  });
}
