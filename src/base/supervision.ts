// A child of `csikit up` stops when its supervisor is gone. `up` gives each child one end of a
// pipe (socket pair) as an extra file descriptor and keeps the other; the kernel closes `up`'s
// end however `up` ends — kill -9 included — and the child reads end-of-file. The child then
// stops as on SIGTERM (the command's own graceful shutdown: sockets closed, leases released,
// volumes left as they are for the next `up` to resume), and exits regardless after a grace
// period. Without the descriptor (a command run by hand) nothing happens.

import { fstatSync } from "node:fs";
import { Socket } from "node:net";

/** Names the child's descriptor of the pipe (set by the supervisor, removed by the child). */
export const SUPERVISOR_FD_ENV = "CSIKIT_SUPERVISOR_FD";
/** The descriptor the supervisor passes the pipe as (the first after stdin, stdout, stderr). */
export const SUPERVISOR_FD = 3;
/** How long a child whose supervisor is gone may take to stop before it exits anyway, ms. */
export const SUPERVISOR_GONE_GRACE_MS = 15_000;

/**
 * In a supervised child: watches the supervisor's pipe and, once it closes, sends SIGTERM to this
 * process and exits after `graceMs`. Removes the variable from the environment, so processes
 * this one starts do not watch a descriptor they were never given. Returns whether it watches.
 */
export function stopWhenSupervisorGone(
  options: { env?: NodeJS.ProcessEnv; graceMs?: number; onGone?: () => void } = {},
): boolean {
  const env = options.env ?? process.env;
  const value = env[SUPERVISOR_FD_ENV];
  if (value === undefined) return false;
  delete env[SUPERVISOR_FD_ENV];
  const fd = Number(value);
  let pipe: Socket;
  try {
    if (!Number.isInteger(fd) || fd < 3 || !fstatSync(fd).isSocket()) return false;
    pipe = new Socket({ fd, readable: true, writable: false });
  } catch {
    return false;
  }
  let gone = false;
  const stop = (): void => {
    if (gone) return;
    gone = true;
    pipe.destroy();
    process.stderr.write("supervisor gone (csikit up ended): stopping\n");
    options.onGone?.();
    process.kill(process.pid, "SIGTERM");
    setTimeout(() => process.exit(1), options.graceMs ?? SUPERVISOR_GONE_GRACE_MS).unref();
  };
  pipe.once("end", stop);
  pipe.once("close", stop);
  pipe.once("error", stop);
  pipe.resume();
  pipe.unref();
  return true;
}
