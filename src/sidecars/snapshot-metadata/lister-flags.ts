// `csikit snapshot-metadata list`'s flags: upstream's example snapshot-metadata-lister's
// (examples/snapshot-metadata-lister: -n/-namespace, -s/-snapshot, -p/-previous-snapshot,
// -o/-output-format, -kubeconfig, -service-account, -service-account-namespace, -token-expiry,
// -starting-offset, -max-results), plus -P/-previous-snapshot-id for a base given by its CSI
// snapshot id (the v0.2+ API's base_snapshot_id) and csikit's spellings `--snapshot ns/name` and
// `--base ns/name`.

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import type { ListOptions } from "./lister.ts";

function withShorthand(long: string, short: string, help: string, def?: string): FlagSpecs {
  return {
    [long]: { type: "string", ...(def !== undefined ? { default: def } : {}), help },
    [short]: {
      type: "string",
      ...(def !== undefined ? { default: def } : {}),
      help: `Shorthand for -${long}`,
    },
  };
}

export const LISTER_FLAGS: FlagSpecs = {
  ...withShorthand("namespace", "n", "The Namespace containing the VolumeSnapshot objects."),
  ...withShorthand(
    "snapshot",
    "s",
    "The name of the VolumeSnapshot for which metadata is to be displayed (namespace/name also accepted).",
  ),
  ...withShorthand(
    "previous-snapshot",
    "p",
    "The name of an earlier VolumeSnapshot against which changed block metadata is to be displayed.",
  ),
  ...withShorthand(
    "previous-snapshot-id",
    "P",
    "The CSI snapshot id of an earlier snapshot against which changed block metadata is to be displayed.",
  ),
  base: {
    type: "string",
    help: "csikit: the earlier VolumeSnapshot as namespace/name or name (same as -previous-snapshot).",
  },
  ...withShorthand(
    "output-format",
    "o",
    'The format of the output. Possible values: "table" or "json".',
    "table",
  ),
  kubeconfig: {
    type: "string",
    help: "Path to the kubeconfig file. Default: in-cluster, else $KUBECONFIG, else ~/.kube/config.",
  },
  "service-account": {
    type: "string",
    help: "ServiceAccount used to create a security token. If unspecified the ServiceAccount of the Pod in which the command is invoked will be used.",
  },
  "service-account-namespace": {
    type: "string",
    help: "Namespace of the ServiceAccount used to create a security token. If unspecified the Namespace of the Pod in which the command is invoked will be used.",
  },
  "token-expiry": { type: "int", default: "600", help: "Expiry time in seconds for the security token." },
  "starting-offset": { type: "int", default: "0", help: "The starting byte offset." },
  "max-results": { type: "int", default: "0", help: "The maximum results per record." },
};

/** A long flag or its shorthand, whichever was given ("" when neither). */
function either(flags: Flags, long: string, short: string): string {
  if (flags.isSet(long)) return flags.string(long);
  if (flags.isSet(short)) return flags.string(short);
  return flags.string(long);
}

/** "ns/name" or "name" → its parts; the namespace may come from -n instead. */
function splitRef(ref: string, flag: string): { namespace?: string; name: string } {
  const parts = ref.split("/");
  if (parts.length === 1) return { name: ref };
  if (parts.length === 2 && parts[0] !== "" && parts[1] !== "")
    return { namespace: parts[0]!, name: parts[1]! };
  throw new FlagError(`-${flag} ${JSON.stringify(ref)}: want name or namespace/name`);
}

/** The pod's ServiceAccount, as a pod's projected token names it (upstream's default). */
export interface PodIdentity {
  namespace?: string;
  serviceAccount?: string;
}

export function listOptionsFromFlags(flags: Flags, pod: PodIdentity = {}): ListOptions {
  const snapshotRef = either(flags, "snapshot", "s");
  if (snapshotRef === "")
    throw new FlagError("missing -snapshot: the VolumeSnapshot to list (name or namespace/name)");
  const snapshot = splitRef(snapshotRef, "snapshot");
  const namespaceFlag = either(flags, "namespace", "n");
  if (snapshot.namespace && namespaceFlag !== "" && namespaceFlag !== snapshot.namespace)
    throw new FlagError(`-snapshot ${snapshotRef} and -namespace ${namespaceFlag} name different namespaces`);
  const namespace = snapshot.namespace ?? (namespaceFlag !== "" ? namespaceFlag : (pod.namespace ?? ""));
  if (namespace === "") throw new FlagError("missing -namespace (or -snapshot namespace/name)");
  const previousRef = flags.isSet("base") ? flags.string("base") : either(flags, "previous-snapshot", "p");
  const previous =
    previousRef === ""
      ? undefined
      : splitRef(previousRef, flags.isSet("base") ? "base" : "previous-snapshot");
  if (previous?.namespace && previous.namespace !== namespace)
    throw new FlagError(
      `the base snapshot must be in the snapshot's namespace ${namespace}, not ${previous.namespace}`,
    );
  const previousId = either(flags, "previous-snapshot-id", "P");
  if (previous && previousId !== "")
    throw new FlagError(
      "give the base snapshot by name (-previous-snapshot/-base) or by id (-previous-snapshot-id), not both",
    );
  const format = either(flags, "output-format", "o");
  if (format !== "table" && format !== "json") throw new FlagError(`Unknown output format: ${format}`);
  const accountName = flags.string("service-account") || pod.serviceAccount || "";
  if (accountName === "")
    throw new FlagError(
      "missing -service-account: the ServiceAccount whose token is sent (not running in a pod)",
    );
  const accountNamespace = flags.string("service-account-namespace") || pod.namespace || namespace;
  const tokenExpirySeconds = flags.number("token-expiry");
  if (tokenExpirySeconds < 0) throw new FlagError("invalid -token-expiry: must not be negative");
  const maxResults = flags.number("max-results");
  if (maxResults < 0) throw new FlagError("invalid -max-results: must not be negative");
  const startingOffset = flags.number("starting-offset");
  if (startingOffset < 0) throw new FlagError("invalid -starting-offset: must not be negative");
  return {
    namespace,
    snapshotName: snapshot.name,
    ...(previous ? { previousSnapshotName: previous.name } : {}),
    ...(previousId !== "" ? { previousSnapshotId: previousId } : {}),
    serviceAccount: { namespace: accountNamespace, name: accountName },
    tokenExpirySeconds: tokenExpirySeconds === 0 ? 600 : tokenExpirySeconds,
    startingOffset,
    maxResults,
    format,
  };
}

/**
 * The ServiceAccount of the pod this runs in, from its mounted token (the JWT's kubernetes.io
 * claims) and namespace file; empty outside a pod.
 */
export async function podIdentity(
  serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount",
): Promise<PodIdentity> {
  const { readFile } = await import("node:fs/promises");
  const read = async (file: string): Promise<string | undefined> => {
    try {
      return (await readFile(`${serviceAccountDir}/${file}`, "utf8")).trim();
    } catch {
      return undefined;
    }
  };
  const namespace = await read("namespace");
  const token = await read("token");
  let serviceAccount: string | undefined;
  try {
    const claims = JSON.parse(Buffer.from(token?.split(".")[1] ?? "", "base64url").toString("utf8")) as {
      "kubernetes.io"?: { serviceaccount?: { name?: string } };
    };
    serviceAccount = claims["kubernetes.io"]?.serviceaccount?.name;
  } catch {
    serviceAccount = undefined;
  }
  return {
    ...(namespace ? { namespace } : {}),
    ...(serviceAccount ? { serviceAccount } : {}),
  };
}
