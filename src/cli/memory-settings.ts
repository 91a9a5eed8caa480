// Start-up settings for the processes that speak only CSI: the daemons a node DaemonSet runs
// once per driver on every node, and `csikit sanity`. Each is memory a node pays per process
// (`npm run bench:rss`; README, "Benchmarks"):
// - A young generation capped at 1 MiB per semi-space (V8 grows it to 8 by default): hostpath
//   1.5 MiB lower idle and 15 MiB lower after 1,000 volumes at no measurable throughput cost,
//   sanity's peak 3.5 MiB lower.
// - For the registrar and the livenessprobe, which make a few calls a minute, and sanity, whose
//   time goes to waiting on the driver: no optimising compiler (--max-opt=1: interpreter and
//   Sparkplug). Start-up alone makes the module loader hot enough for Maglev and TurboFan,
//   which pages in 8 MiB of their machine code; after 1,000 probes the livenessprobe holds
//   72 MiB instead of 97 for 10% more CPU, and a whole sanity run peaks at 70 MiB instead of
//   91–99 in the same 3 s. Not for hostpath: its volume traffic costs a third more CPU without.
// - One malloc arena (MALLOC_ARENA_MAX=1): glibc gives every thread that allocates an arena of
//   its own; Node's JS runs on one thread, and the others' arenas are 0.5–1 MiB of idle RSS.
// Applied by the launcher (bin/csikit.js) through a re-exec, and by `up` when it starts them.

export interface MemorySettings {
  /** V8 flags, given before the script. */
  v8Flags: readonly string[];
  /** Environment variables. */
  env: Readonly<Record<string, string>>;
}

const SEMI_SPACE = "--max-semi-space-size=1";
const NO_OPTIMISING_COMPILER = "--max-opt=1";
const CSI_ONLY_ENV = { MALLOC_ARENA_MAX: "1" };
const CSI_ONLY_V8_FLAGS: ReadonlyMap<string, readonly string[]> = new Map([
  ["hostpath", [SEMI_SPACE]],
  ["sanity", [SEMI_SPACE, NO_OPTIMISING_COMPILER]],
  ["registrar", [SEMI_SPACE, NO_OPTIMISING_COMPILER]],
  ["livenessprobe", [SEMI_SPACE, NO_OPTIMISING_COMPILER]],
]);

/** The settings a csikit subcommand starts with, or undefined for Node's defaults. */
export function memorySettingsOf(subcommand: string): MemorySettings | undefined {
  const v8Flags = CSI_ONLY_V8_FLAGS.get(subcommand);
  return v8Flags === undefined ? undefined : { v8Flags, env: CSI_ONLY_ENV };
}
