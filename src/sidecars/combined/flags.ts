// The flags of `csikit sidecars` and `csikit node-sidecars`: one process, several sidecars,
// each sidecar's flags as its own command has them. The scheme (docs/sidecars.md):
//   - SHARED flags keep their plain names and apply to every sidecar of the process: the one
//     CSI connection (--csi-address), the one diagnostics endpoint (--http-endpoint,
//     --metrics-path), the shared-read identity (--kubeconfig, --kube-api-qps/-burst), the
//     leader-election flags, -v and the logging flags;
//   - COMPONENT flags are namespaced `--<component>.<flag>`, e.g. `--provisioner.timeout=30s`,
//     `--attacher.worker-threads=20`, `--resizer.feature-gates=VolumeAttributesClass=true`;
//   - a shared flag that a sidecar also takes may be overridden for it the same way:
//     `--provisioner.kubeconfig=FILE` is the identity of the provisioner's writes (its Role),
//     `--attacher.kube-api-qps=20` its own token bucket.
// `componentFlags` projects the parsed flags onto one component's own table, so each
// sidecar's own `...OptionsFromFlags` validates them and names the bad flag as ever.

import { Flags, parseFlags, type FlagSpecs } from "../../base/index.ts";
import { COMMON_SIDECAR_FLAGS, SIDECAR_LOGGING_FLAGS } from "../../kube/index.ts";

/** Shared flags that a component may not override: there is one connection and one endpoint. */
const PROCESS_ONLY = new Set(["csi-address", "http-endpoint", "metrics-address", "metrics-path", "master"]);

/** Flags of the common table that differ per sidecar: namespaced only. */
const PER_COMPONENT_ONLY = new Set(["feature-gates", "retry-interval-start", "retry-interval-max"]);

/** The shared flags of a controller-side process. */
export const SHARED_SIDECAR_FLAGS: FlagSpecs = Object.fromEntries(
  Object.entries({ ...COMMON_SIDECAR_FLAGS, ...SIDECAR_LOGGING_FLAGS }).filter(
    ([name]) => !PER_COMPONENT_ONLY.has(name),
  ),
);

/**
 * `--<component>.<flag>` for every flag of each component except the process-only ones and
 * the logging flags (one logger per process). `shared` names the flags every component reads
 * from the plain name unless overridden.
 */
export function namespacedFlags(
  components: Readonly<Record<string, FlagSpecs>>,
  shared: FlagSpecs,
  /** Flags only the process takes (default: the CSI address and the one diagnostics endpoint). */
  processOnly: ReadonlySet<string> = PROCESS_ONLY,
): FlagSpecs {
  const out: FlagSpecs = {};
  for (const [component, specs] of Object.entries(components)) {
    for (const [name, spec] of Object.entries(specs)) {
      if (processOnly.has(name) || Object.hasOwn(SIDECAR_LOGGING_FLAGS, name)) continue;
      const overrides = Object.hasOwn(shared, name);
      out[`${component}.${name}`] = {
        ...spec,
        help: overrides
          ? `${component} only: overrides --${name}. ${spec.help}`
          : `${component}: ${spec.help}`,
      };
    }
  }
  return out;
}

/**
 * The flags of one component as if its own command had parsed them: `--<component>.<name>`
 * when given, else the shared `--<name>` when given, else the component's own default (its
 * defaults are kept even where a shared flag of the same name has another). `component` ""
 * reads the plain names only (the process's own shared options).
 */
export function componentFlags(flags: Flags, component: string, specs: FlagSpecs): Flags {
  const { parsed } = flags;
  // The component's own defaults, for names this process does not take at all.
  const { values } = parseFlags(specs, []);
  const set = new Set<string>();
  for (const name of Object.keys(specs)) {
    const own = component === "" ? name : `${component}.${name}`;
    const from = parsed.set.has(own)
      ? own
      : parsed.set.has(name)
        ? name
        : parsed.values.has(own)
          ? own
          : name;
    const value = parsed.values.get(from);
    if (value === undefined) continue;
    values.set(name, value);
    if (parsed.set.has(from)) set.add(name);
  }
  return new Flags({ values, set, positionals: [], help: false, version: false });
}
