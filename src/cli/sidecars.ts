// `csikit sidecars`: the controller-side sidecars of one driver in one process. Flags: the
// shared ones by their plain names, each sidecar's own as --<component>.<flag> (see
// src/sidecars/combined/flags.ts); this file only turns them into options and runs it.

import { FlagError, type FlagSpecs, type Flags, type Logger } from "../base/index.ts";
import { COMMON_SIDECAR_FLAGS, commonSidecarOptions } from "../kube/index.ts";
import {
  CONTROLLER_SIDECARS,
  SHARED_SIDECAR_FLAGS,
  SIDECAR_COMPONENTS,
  componentFlags,
  namespacedFlags,
  runSidecars,
  type SidecarsOptions,
} from "../sidecars/combined/index.ts";
import type { Command } from "./command.ts";

const SELECT_FLAGS: FlagSpecs = {
  "single-lease": {
    type: "bool",
    help: "With --leader-election: one Lease csikit-sidecars-<driver> for every sidecar, held under --kubeconfig's identity, instead of one Lease per sidecar with upstream's names.",
  },
};
for (const component of SIDECAR_COMPONENTS)
  SELECT_FLAGS[component] = { type: "bool", help: `Run the ${component} sidecar in this process.` };

export const SIDECARS_FLAGS: FlagSpecs = {
  ...SHARED_SIDECAR_FLAGS,
  ...SELECT_FLAGS,
  ...namespacedFlags(
    Object.fromEntries(SIDECAR_COMPONENTS.map((c) => [c, CONTROLLER_SIDECARS[c].flags])),
    SHARED_SIDECAR_FLAGS,
  ),
};

export const sidecarsCommand: Command = {
  name: "sidecars",
  summary:
    "Run several controller sidecars (provisioner, attacher, resizer, snapshotter, health-monitor) in one process with one CSI connection and one watch per resource",
  usage:
    "csikit sidecars --csi-address=/run/csi/socket --provisioner --attacher [--resizer] [--snapshotter] [--health-monitor] [--kubeconfig=FILE] [--<component>.<flag>=VALUE ...]",
  description:
    "The all-in-one form of the controller sidecars (upstream KEP-4958): one CSI connection, one\n" +
    "list+watch per resource under --kubeconfig's identity (it needs the union of the sidecars' read\n" +
    "rights: deploy/rbac/csikit-sidecars.yaml), each sidecar with its own work queues, its own Lease\n" +
    "(upstream's names; or one for all with --single-lease) and its own client for writes:\n" +
    "--<component>.kubeconfig=FILE (default --kubeconfig), so each sidecar's Role still holds.\n" +
    "Shared flags (--csi-address, --http-endpoint, --kubeconfig, --kube-api-qps, --leader-election*, -v,\n" +
    "logging) apply to all; a sidecar's own flags are namespaced: --provisioner.timeout=30s,\n" +
    "--attacher.worker-threads=20, --resizer.feature-gates=VolumeAttributesClass=true. One /metrics\n" +
    "carries every sidecar's metrics; /healthz/leader-election-<component> per sidecar. docs/sidecars.md.",
  flags: SIDECARS_FLAGS,
  async run({ flags, logger, signal }) {
    await runSidecars({ ...sidecarsOptionsFromFlags(flags, logger), logger }, signal);
    return 0;
  },
};

/** Validates the flags (each sidecar's by its own rules, naming the bad flag) into options. */
export function sidecarsOptionsFromFlags(flags: Flags, logger: Logger): SidecarsOptions {
  const enabled = SIDECAR_COMPONENTS.filter((c) => flags.bool(c));
  if (enabled.length === 0)
    throw new FlagError(
      `no sidecar enabled: give one or more of ${SIDECAR_COMPONENTS.map((c) => `--${c}`).join(", ")}`,
    );
  const sidecars = enabled.map((component) => {
    const row = CONTROLLER_SIDECARS[component];
    const run = row.prepare(componentFlags(flags, component, row.flags), logger.with({ sidecar: component }));
    return { component, run };
  });
  return {
    shared: commonSidecarOptions(componentFlags(flags, "", COMMON_SIDECAR_FLAGS)),
    sidecars,
    singleLease: flags.bool("single-lease"),
  };
}
