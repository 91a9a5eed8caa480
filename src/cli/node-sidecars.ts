// `csikit node-sidecars`: the node's registrar and livenessprobe in one process. Flags: the
// shared ones (--csi-address, -v, logging) by their plain names, each sidecar's own as
// --registrar.<flag> / --livenessprobe.<flag> (src/sidecars/combined/flags.ts).

import { childController, type FlagSpecs, type Flags, type Logger } from "../base/index.ts";
import { COMMON_SIDECAR_FLAGS, SIDECAR_LOGGING_FLAGS } from "../kube/index.ts";
import {
  NODE_SIDECARS,
  componentFlags,
  namespacedFlags,
  type NodeSidecarComponent,
} from "../sidecars/combined/index.ts";
import type { Command } from "./command.ts";

const SHARED: FlagSpecs = { "csi-address": COMMON_SIDECAR_FLAGS["csi-address"]!, ...SIDECAR_LOGGING_FLAGS };
const COMPONENTS = Object.keys(NODE_SIDECARS) as NodeSidecarComponent[];

export const NODE_SIDECARS_FLAGS: FlagSpecs = {
  ...SHARED,
  ...namespacedFlags(
    Object.fromEntries(COMPONENTS.map((c) => [c, NODE_SIDECARS[c].flags])),
    SHARED,
    new Set(["csi-address"]),
  ),
};

export const nodeSidecarsCommand: Command = {
  name: "node-sidecars",
  summary: "Run the node's registrar and livenessprobe in one process (the node DaemonSet's combined form)",
  usage:
    "csikit node-sidecars --csi-address=/csi/csi.sock --registrar.kubelet-registration-path=PATH [--livenessprobe.http-endpoint=:9808] [--<component>.<flag>=VALUE ...]",
  description:
    "node-driver-registrar and livenessprobe in one process: one Node runtime per node instead of two.\n" +
    "--csi-address, -v and the logging flags apply to both; their own flags are namespaced\n" +
    "(--registrar.http-endpoint, --livenessprobe.health-port, ...). When either stops, both stop and\n" +
    "the process exits non-zero, so the kubelet restarts the container. docs/sidecars.md.",
  flags: NODE_SIDECARS_FLAGS,
  async run({ flags, logger, signal }) {
    const runs = nodeSidecarRuns(flags, logger);
    const { controller: stop, dispose } = childController(signal);
    let failure: Error | undefined;
    try {
      await Promise.all(
        runs.map(async (run) => {
          try {
            await run(stop.signal);
          } catch (error) {
            failure ??= error instanceof Error ? error : new Error(String(error));
          } finally {
            stop.abort();
          }
        }),
      );
    } finally {
      dispose();
    }
    if (failure !== undefined) throw failure;
    return signal.aborted ? 0 : 1;
  },
};

/** Validates each sidecar's flags by its own rules; returns how to run each. */
export function nodeSidecarRuns(flags: Flags, logger: Logger): ((signal: AbortSignal) => Promise<void>)[] {
  return COMPONENTS.map((component) => {
    const row = NODE_SIDECARS[component];
    return row.prepare(componentFlags(flags, component, row.flags), logger.with({ sidecar: component }));
  });
}
