// `csikit why <kind> <name>`: explains why a pod, claim, volume, attachment or snapshot is not
// done yet. Parses flags (anywhere among the words, as kubectl takes them), builds the client
// from the kubeconfig as every component does, and hands over to src/why (read-only).

import { FlagError, Flags, parseFlags, type FlagSpecs, type ParsedFlags } from "../base/index.ts";
import { KubeClient, loadKubeConfig } from "../kube/index.ts";
import { TARGET_KINDS, explain, renderJson, renderText, type TargetKind } from "../why/index.ts";
import { commandFlagSpecs, type Command } from "./command.ts";

/** kubectl's names for each kind (singular, plural, short). */
const KIND_ALIASES: Record<string, TargetKind> = {
  pod: "pod",
  pods: "pod",
  po: "pod",
  pvc: "pvc",
  pvcs: "pvc",
  persistentvolumeclaim: "pvc",
  persistentvolumeclaims: "pvc",
  pv: "pv",
  pvs: "pv",
  persistentvolume: "pv",
  persistentvolumes: "pv",
  volumeattachment: "volumeattachment",
  volumeattachments: "volumeattachment",
  va: "volumeattachment",
  volumesnapshot: "volumesnapshot",
  volumesnapshots: "volumesnapshot",
  vs: "volumesnapshot",
};

const NAMESPACED: ReadonlySet<TargetKind> = new Set(["pod", "pvc", "volumesnapshot"]);

/**
 * Flags may follow the positional words (`why pvc data -n ns`): Go's parser stops at the first
 * word, so the words left are parsed again, each time past one positional.
 */
function parseAfterPositionals(specs: FlagSpecs, before: ParsedFlags): ParsedFlags {
  const result: ParsedFlags = {
    ...before,
    values: new Map(before.values),
    set: new Set(before.set),
    positionals: [],
  };
  let rest = before.positionals;
  while (rest.length > 0) {
    const parsed = parseFlags(specs, rest);
    for (const name of parsed.set) {
      result.values.set(name, parsed.values.get(name)!);
      result.set.add(name);
    }
    result.help ||= parsed.help;
    if (parsed.positionals.length === 0) break;
    result.positionals.push(parsed.positionals[0]!);
    rest = parsed.positionals.slice(1);
  }
  return result;
}

export const whyCommand: Command = {
  name: "why",
  summary:
    "Explain why a pod, claim, volume, attachment or snapshot is stuck: the first link not done, its cause and who acts",
  usage:
    "csikit why pod|pvc|pv|volumeattachment|volumesnapshot NAME [-n NAMESPACE] [-o text|json] [--kubeconfig=FILE]",
  description:
    "Walks the chain a volume goes through — claim → StorageClass → VolumeAttributesClass → PersistentVolume " +
    "(provision, bind, resize) → scheduling → node → CSINode (driver registration) → VolumeAttachment → " +
    "stage/publish → pod; for a VolumeSnapshot: class → source claim → content → ready — and prints each link " +
    "that is done, then, for the first that is not: what it waits for, the component responsible (with the " +
    "finalizer or annotation it acts through), the status errors and last events of the objects, and the " +
    "commands that show more or move it on. Read-only (GET and LIST); works against any cluster the " +
    "kubeconfig reaches, not only `csikit up`. Exit code: 0 when every link is done, 1 when one is waiting " +
    "or failed (or the object does not exist), 2 on bad flags, 3 when the API server could not be read.",
  flags: {
    kubeconfig: {
      type: "string",
      help: "Path to a kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).",
    },
    master: {
      type: "string",
      help: "The address of the Kubernetes API server (overrides any value in kubeconfig).",
    },
    n: {
      type: "string",
      help: "Namespace of a pod, claim or snapshot (default: the kubeconfig's, else default).",
    },
    namespace: { type: "string", help: "Alias of -n." },
    o: { type: "string", default: "text", help: "Output format: text or json." },
    output: { type: "string", help: "Alias of -o." },
  },
  async run({ flags: given, stdout }) {
    const flags = new Flags(parseAfterPositionals(commandFlagSpecs(whyCommand), given.parsed));
    const [kindWord, name, ...extra] = flags.parsed.positionals;
    if (kindWord === undefined || name === undefined)
      throw new FlagError(`want a kind and a name: ${TARGET_KINDS.join("|")} NAME (see --help)`);
    if (extra.length > 0) throw new FlagError(`unexpected argument ${JSON.stringify(extra[0])}`);
    const kind = KIND_ALIASES[kindWord.toLowerCase()];
    if (kind === undefined)
      throw new FlagError(`unknown kind ${JSON.stringify(kindWord)}: want one of ${TARGET_KINDS.join(", ")}`);
    const output = flags.isSet("output") ? flags.string("output") : flags.string("o");
    if (output !== "text" && output !== "json")
      throw new FlagError(`invalid value ${JSON.stringify(output)} for flag -o: want text or json`);
    let client: KubeClient;
    try {
      const kubeConfig = loadKubeConfig({
        kubeconfig: flags.string("kubeconfig"),
        master: flags.string("master"),
      });
      client = new KubeClient({ kubeConfig, qps: 50, burst: 100, userAgent: "csikit-why" });
    } catch (error) {
      process.stderr.write(`csikit why: ${(error as Error).message}\n`);
      return 3;
    }
    const namespace =
      (flags.isSet("namespace") ? flags.string("namespace") : flags.string("n")) ||
      client.kubeConfig.namespace ||
      "default";
    try {
      const diagnosis = await explain(client, {
        kind,
        name,
        ...(NAMESPACED.has(kind) ? { namespace } : {}),
      });
      stdout.write(output === "json" ? renderJson(diagnosis) : renderText(diagnosis));
      return diagnosis.done ? 0 : 1;
    } catch (error) {
      process.stderr.write(`csikit why: reading ${kind} ${name}: ${(error as Error).message}\n`);
      return 3;
    } finally {
      client.close();
    }
  },
};
