// How the suite makes, removes and inspects the staging and target paths it hands the driver.
// Locally by default (mkdir, rmdir/unlink, lstat). csi-sanity's path commands replace each step
// with a program, so a suite can drive a driver whose node runs elsewhere (in a pod, on another
// machine): the program gets the path as its one argument; create commands print the path to
// use (csi-sanity trims the output), the check command prints `file`, `directory`,
// `not_found` or `other`. Each has a timeout (csi-sanity's default: 10s).

import { execFile } from "node:child_process";
import { lstat, mkdir, rmdir, unlink } from "node:fs/promises";
import { CsikitError, errorCode } from "../base/index.ts";

export type PathKind = "staging" | "target";
export type PathState = "file" | "directory" | "not_found" | "other";

export interface PathOps {
  /** Makes the directory `path` (with parents) and returns the path to use. */
  create(path: string, kind: PathKind): Promise<string>;
  /** Removes `path` (a directory or file) if it exists. */
  remove(path: string, kind: PathKind): Promise<void>;
  check(path: string): Promise<PathState>;
  /** True when some step runs elsewhere: the suite cannot look into the paths itself. */
  readonly remote: boolean;
}

export interface PathCommands {
  createMountPathCmd?: string;
  createStagingPathCmd?: string;
  removeMountPathCmd?: string;
  removeStagingPathCmd?: string;
  checkPathCmd?: string;
  /** Per command, ms. Default 10000 each, as csi-sanity. */
  createTimeoutMs?: number;
  removeTimeoutMs?: number;
  checkTimeoutMs?: number;
}

export const DEFAULT_PATH_COMMAND_TIMEOUT_MS = 10_000;

/** A path command failed, timed out, or printed something unusable. */
export class PathCommandError extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_SANITY_PATH_COMMAND", message);
    this.name = "PathCommandError";
  }
}

function runCommand(command: string, path: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      [path],
      { timeout: timeoutMs, maxBuffer: 1 << 16, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error) {
          const why = error.killed ? `timed out after ${timeoutMs}ms` : stderr.trim() || error.message;
          reject(new PathCommandError(`path command ${command} ${path}: ${why}`));
          return;
        }
        resolve(stdout.trim());
      },
    );
  });
}

const local: PathOps = {
  async create(path) {
    await mkdir(path, { recursive: true });
    return path;
  },
  async remove(path) {
    try {
      if ((await lstat(path)).isDirectory()) await rmdir(path);
      else await unlink(path);
    } catch (error) {
      if (errorCode(error) !== "ENOENT") throw error;
    }
  },
  async check(path) {
    try {
      const info = await lstat(path);
      return info.isDirectory() ? "directory" : info.isFile() ? "file" : "other";
    } catch (error) {
      if (errorCode(error) === "ENOENT") return "not_found";
      throw error;
    }
  },
  remote: false,
};

function isPathState(text: string): text is PathState {
  return text === "file" || text === "directory" || text === "not_found" || text === "other";
}

/** Local steps, each replaced by its command when one is given. */
export function pathOps(commands: PathCommands = {}): PathOps {
  const create = (kind: PathKind): string | undefined =>
    kind === "staging" ? commands.createStagingPathCmd : commands.createMountPathCmd;
  const remove = (kind: PathKind): string | undefined =>
    kind === "staging" ? commands.removeStagingPathCmd : commands.removeMountPathCmd;
  const createTimeout = commands.createTimeoutMs ?? DEFAULT_PATH_COMMAND_TIMEOUT_MS;
  const removeTimeout = commands.removeTimeoutMs ?? DEFAULT_PATH_COMMAND_TIMEOUT_MS;
  const checkTimeout = commands.checkTimeoutMs ?? DEFAULT_PATH_COMMAND_TIMEOUT_MS;
  return {
    async create(path, kind) {
      const command = create(kind);
      if (!command) return local.create(path, kind);
      const made = await runCommand(command, path, createTimeout);
      if (made === "") throw new PathCommandError(`path command ${command} ${path} printed no path`);
      return made;
    },
    async remove(path, kind) {
      const command = remove(kind);
      if (!command) return local.remove(path, kind);
      await runCommand(command, path, removeTimeout);
    },
    async check(path) {
      if (!commands.checkPathCmd) return local.check(path);
      const state = await runCommand(commands.checkPathCmd, path, checkTimeout);
      if (!isPathState(state))
        throw new PathCommandError(
          `path command ${commands.checkPathCmd} ${path} printed ${JSON.stringify(state)}; want file, directory, not_found or other`,
        );
      return state;
    },
    remote: Object.values(commands).some((value) => typeof value === "string" && value !== ""),
  };
}
