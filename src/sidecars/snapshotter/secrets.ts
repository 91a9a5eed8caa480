// Secrets of the snapshot calls (external-snapshotter pkg/utils GetSecretReference and the
// sidecar's GetCredentialsFromAnnotation). Which secret a call carries:
// - CreateSnapshot and DeleteSnapshot: the content's deletion-secret annotations, which the
//   snapshot-controller resolves from the class's snapshotter-secret-name/-namespace templates
//   when it creates the content (so deletion still works after the class is gone);
// - the status check (ListSnapshots / GetSnapshot) of a pre-provisioned content: the class's
//   snapshotter-list-secret-name/-namespace, whose templates may only use the content name;
// - group calls alike with the groupsnapshot.* annotations and group-snapshotter-get-secret-*.
// Template rules (`snapshotSecretReference`) are exported for the snapshot-controller's side.
// Secret values only ever go into a CSI request; errors name the reference, never a value.

import {
  GVR,
  isDNS1123Label,
  isDNS1123Subdomain,
  type Secret,
  type SecretReference,
} from "../../api/index.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";
import { expandTemplate, isNotFound, secretStrings, type KubeClient } from "../../kube/index.ts";
import { PARAMETER } from "./names.ts";

export type SecretParams = "Snapshotter" | "SnapshotterList" | "GroupSnapshotter" | "GroupSnapshotterGet";

const KEYS: Record<SecretParams, { name: string; namespace: string }> = {
  Snapshotter: { name: PARAMETER.snapshotterSecretName, namespace: PARAMETER.snapshotterSecretNamespace },
  SnapshotterList: {
    name: PARAMETER.snapshotterListSecretName,
    namespace: PARAMETER.snapshotterListSecretNamespace,
  },
  GroupSnapshotter: {
    name: PARAMETER.groupSnapshotterSecretName,
    namespace: PARAMETER.groupSnapshotterSecretNamespace,
  },
  GroupSnapshotterGet: {
    name: PARAMETER.groupSnapshotterGetSecretName,
    namespace: PARAMETER.groupSnapshotterGetSecretNamespace,
  },
};

export class SecretParameterError extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_VALIDATION", message);
    this.name = "SecretParameterError";
  }
}

function templates(
  kind: SecretParams,
  parameters: Readonly<Record<string, string>>,
): { name: string; namespace: string } | undefined {
  const keys = KEYS[kind];
  const hasName = keys.name in parameters;
  const hasNamespace = keys.namespace in parameters;
  if (hasName !== hasNamespace)
    throw new SecretParameterError(
      `failed to get name and namespace template from params: either name and namespace for ${kind} secrets specified, Both must be specified`,
    );
  if (!hasName) return undefined;
  const name = parameters[keys.name]!;
  const namespace = parameters[keys.namespace]!;
  if (name === "" || namespace === "")
    throw new SecretParameterError(
      `failed to get name and namespace template from params: ${kind} secrets specified in parameters but value of either namespace or name is empty`,
    );
  return { name, namespace };
}

function resolve(template: string, values: Record<string, string>): string {
  const { value, missing } = expandTemplate(template, values);
  if (missing.length > 0)
    throw new SecretParameterError(
      `error resolving value ${JSON.stringify(template)}: invalid tokens: ${JSON.stringify([...missing].sort())}`,
    );
  return value;
}

/** What a template may name: the content, and (at create time only) the snapshot. */
export interface SecretTemplateObjects {
  /** VolumeSnapshotContent (or VolumeGroupSnapshotContent) name. */
  contentName: string;
  /** The VolumeSnapshot (or VolumeGroupSnapshot); absent where it may be gone (deletion, status). */
  snapshot?: { name: string; namespace: string };
}

/**
 * The secret a class names for `kind`, or undefined when it names none. Name templates may use
 * ${volumesnapshotcontent.name}, ${volumesnapshot.name}, ${volumesnapshot.namespace}; namespace
 * templates ${volumesnapshotcontent.name} and ${volumesnapshot.namespace} (the group kinds the
 * same with volumegroupsnapshot*). The resolved namespace must be a DNS-1123 label, the name a
 * DNS-1123 subdomain.
 */
export function snapshotSecretReference(
  kind: SecretParams,
  parameters: Readonly<Record<string, string>> = {},
  objects: SecretTemplateObjects,
): SecretReference | undefined {
  const found = templates(kind, parameters);
  if (!found) return undefined;
  const group = kind.startsWith("Group");
  const content = group ? "volumegroupsnapshotcontent.name" : "volumesnapshotcontent.name";
  const snapshot = group ? "volumegroupsnapshot" : "volumesnapshot";
  const namespaceValues: Record<string, string> = { [content]: objects.contentName };
  if (objects.snapshot) namespaceValues[`${snapshot}.namespace`] = objects.snapshot.namespace;
  const namespace = resolve(found.namespace, namespaceValues);
  if (isDNS1123Label(namespace).length > 0)
    throw new SecretParameterError(
      namespace !== found.namespace
        ? `${JSON.stringify(found.namespace)} resolved to ${JSON.stringify(namespace)} which is not a valid namespace name`
        : `${JSON.stringify(found.namespace)} is not a valid namespace name`,
    );
  const nameValues: Record<string, string> = { [content]: objects.contentName };
  if (objects.snapshot) {
    nameValues[`${snapshot}.name`] = objects.snapshot.name;
    nameValues[`${snapshot}.namespace`] = objects.snapshot.namespace;
  }
  const name = resolve(found.name, nameValues);
  if (isDNS1123Subdomain(name).length > 0)
    throw new SecretParameterError(
      name !== found.name
        ? `${JSON.stringify(found.name)} resolved to ${JSON.stringify(name)} which is not a valid secret name`
        : `${JSON.stringify(found.name)} is not a valid secret name`,
    );
  return { name, namespace };
}

/**
 * The secret named by a pair of annotations (deletion-secret-name/-namespace), or undefined when
 * the object has neither; one of them empty is an error.
 */
export function annotatedSecretReference(
  annotations: Readonly<Record<string, string>> | undefined,
  keys: { name: string; namespace: string },
  what: string,
): SecretReference | undefined {
  if (!annotations || !(keys.name in annotations) || !(keys.namespace in annotations)) return undefined;
  const name = annotations[keys.name]!;
  const namespace = annotations[keys.namespace]!;
  if (name === "" || namespace === "")
    throw new SecretParameterError(
      `cannot retrieve secrets for ${what}, err: secret name or namespace not specified`,
    );
  return { name, namespace };
}

/** The secret's data as CSI takes it (all keys, UTF-8), or {} without a reference. */
export async function fetchCredentials(
  client: KubeClient,
  ref: SecretReference | undefined,
  signal: AbortSignal,
): Promise<Record<string, string>> {
  if (!ref?.name) return {};
  const namespace = ref.namespace ?? "";
  try {
    return secretStrings(await client.get<Secret>(GVR.secrets, ref.name, { namespace }, signal));
  } catch (error) {
    const reason = isNotFound(error) ? `secrets "${ref.name}" not found` : errorMessage(error);
    throw new CsikitError(
      "CSIKIT_ERR_SECRET",
      `error getting secret ${ref.name} in namespace ${namespace}: ${reason}`,
    );
  }
}
