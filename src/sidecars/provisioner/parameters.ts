// StorageClass parameters: the reserved `csi.storage.k8s.io/` keys the provisioner consumes
// (fsType, the secret name/namespace pairs, their legacy spellings) are stripped before
// CreateVolume; an unknown key with the prefix is an error, as upstream's
// removePrefixedParameters. Secret references are resolved from templates (FACTS.md "Secret
// templates"): a name may use ${pv.name}, ${pvc.name}, ${pvc.namespace} and
// ${pvc.annotations['<key>']}; a namespace only ${pv.name} and ${pvc.namespace}. Errors name
// the parameter but never a secret's content (only names and namespaces are handled here).

import { isDNS1123Label, isDNS1123Subdomain, type PersistentVolumeClaim } from "../../api/index.ts";
import { expandTemplate } from "../../kube/index.ts";

export const PREFIX = "csi.storage.k8s.io/";
export const FSTYPE_KEY = `${PREFIX}fstype`;

export type SecretKind =
  | "provisioner"
  | "controllerPublish"
  | "nodeStage"
  | "nodePublish"
  | "controllerExpand"
  | "nodeExpand"
  | "controllerModify";

interface SecretParams {
  /** Used in errors, as upstream's secretParamsMap.name. */
  title: string;
  nameKey: string;
  namespaceKey: string;
  legacyNameKey?: string;
  legacyNamespaceKey?: string;
}

export const SECRET_PARAMS: Readonly<Record<SecretKind, SecretParams>> = {
  provisioner: {
    title: "Provisioner",
    nameKey: `${PREFIX}provisioner-secret-name`,
    namespaceKey: `${PREFIX}provisioner-secret-namespace`,
    legacyNameKey: "csiProvisionerSecretName",
    legacyNamespaceKey: "csiProvisionerSecretNamespace",
  },
  controllerPublish: {
    title: "ControllerPublish",
    nameKey: `${PREFIX}controller-publish-secret-name`,
    namespaceKey: `${PREFIX}controller-publish-secret-namespace`,
    legacyNameKey: "csiControllerPublishSecretName",
    legacyNamespaceKey: "csiControllerPublishSecretNamespace",
  },
  nodeStage: {
    title: "NodeStage",
    nameKey: `${PREFIX}node-stage-secret-name`,
    namespaceKey: `${PREFIX}node-stage-secret-namespace`,
    legacyNameKey: "csiNodeStageSecretName",
    legacyNamespaceKey: "csiNodeStageSecretNamespace",
  },
  nodePublish: {
    title: "NodePublish",
    nameKey: `${PREFIX}node-publish-secret-name`,
    namespaceKey: `${PREFIX}node-publish-secret-namespace`,
    legacyNameKey: "csiNodePublishSecretName",
    legacyNamespaceKey: "csiNodePublishSecretNamespace",
  },
  controllerExpand: {
    title: "ControllerExpand",
    nameKey: `${PREFIX}controller-expand-secret-name`,
    namespaceKey: `${PREFIX}controller-expand-secret-namespace`,
  },
  nodeExpand: {
    title: "NodeExpand",
    nameKey: `${PREFIX}node-expand-secret-name`,
    namespaceKey: `${PREFIX}node-expand-secret-namespace`,
  },
  controllerModify: {
    title: "ControllerModify",
    nameKey: `${PREFIX}controller-modify-secret-name`,
    namespaceKey: `${PREFIX}controller-modify-secret-namespace`,
  },
};

const DEFAULT_NAME_KEY = `${PREFIX}secret-name`;
const DEFAULT_NAMESPACE_KEY = `${PREFIX}secret-namespace`;

const RESERVED = new Set<string>([
  FSTYPE_KEY,
  DEFAULT_NAME_KEY,
  DEFAULT_NAMESPACE_KEY,
  ...Object.values(SECRET_PARAMS).flatMap((p) => [p.nameKey, p.namespaceKey]),
]);
const LEGACY = new Set<string>(
  Object.values(SECRET_PARAMS).flatMap((p) =>
    p.legacyNameKey ? [p.legacyNameKey, p.legacyNamespaceKey!] : [],
  ),
);

export class ParameterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ParameterError";
  }
}

/** Class parameters for the driver: reserved and legacy keys removed; unknown reserved keys throw. */
export function driverParameters(parameters: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (key.startsWith(PREFIX)) {
      if (!RESERVED.has(key))
        throw new ParameterError(`found unknown parameter key "${key}" with reserved namespace ${PREFIX}`);
      continue;
    }
    if (LEGACY.has(key)) continue;
    out[key] = value;
  }
  return out;
}

/**
 * The fsType of a class: `csi.storage.k8s.io/fstype` or the deprecated `fstype` (any case), else
 * --default-fstype; giving both is an error, as upstream.
 */
export function classFsType(parameters: Readonly<Record<string, string>> = {}, defaultFsType = ""): string {
  let found = 0;
  let fsType = "";
  for (const [key, value] of Object.entries(parameters))
    if (key === FSTYPE_KEY || key.toLowerCase() === "fstype") {
      fsType = value;
      found++;
    }
  if (found > 1)
    throw new ParameterError(`fstype specified in parameters with both "fstype" and "${FSTYPE_KEY}" keys`);
  return found === 1 ? fsType : defaultFsType;
}

/**
 * The unresolved name and namespace templates a class gives for one kind of secret (its own
 * pair, else the default pair), or undefined when it names none; throws on a half pair.
 */
export function secretTemplates(
  kind: SecretKind,
  parameters: Readonly<Record<string, string>>,
): { name: string; namespace: string } | undefined {
  const p = SECRET_PARAMS[kind];
  let names = 0;
  let namespaces = 0;
  let name = "";
  let namespace = "";
  for (const key of [p.legacyNameKey, p.nameKey])
    if (key !== undefined && key in parameters) {
      name = parameters[key]!;
      names++;
    }
  for (const key of [p.legacyNamespaceKey, p.namespaceKey])
    if (key !== undefined && key in parameters) {
      namespace = parameters[key]!;
      namespaces++;
    }
  if (names > 1 || namespaces > 1)
    throw new ParameterError(`${p.legacyNameKey} and ${p.nameKey} parameters cannot be specified together`);
  if (names !== namespaces)
    throw new ParameterError(
      `either name and namespace for ${p.title} secrets specified, Both must be specified`,
    );
  if (names === 1) return { name, namespace };
  // The default pair applies to every operation without its own.
  const dn = DEFAULT_NAME_KEY in parameters;
  const dns = DEFAULT_NAMESPACE_KEY in parameters;
  if (dn !== dns)
    throw new ParameterError(
      `either name and namespace for ${p.title} secrets specified, Both must be specified`,
    );
  if (dn) return { name: parameters[DEFAULT_NAME_KEY]!, namespace: parameters[DEFAULT_NAMESPACE_KEY]! };
  return undefined;
}

/** os.Expand over ${name} and $name; unknown tokens are collected into one error. */
export function resolveTemplate(template: string, values: Readonly<Record<string, string>>): string {
  const { value, missing } = expandTemplate(template, values);
  if (missing.length > 0) throw new ParameterError(`invalid tokens: ${JSON.stringify(missing)}`);
  return value;
}

export interface SecretRef {
  name: string;
  namespace: string;
}

/**
 * The secret reference for one operation, or undefined when the class names none. `claim` is
 * absent when resolving for deletion (only ${pv.name} is then available).
 */
export function secretReference(
  kind: SecretKind,
  parameters: Readonly<Record<string, string>> = {},
  pvName: string,
  claim?: PersistentVolumeClaim,
): SecretRef | undefined {
  const found = secretTemplates(kind, parameters);
  if (!found) return undefined;
  const namespaceValues: Record<string, string> = { "pv.name": pvName };
  if (claim) namespaceValues["pvc.namespace"] = claim.metadata?.namespace ?? "";
  let namespace: string;
  try {
    namespace = resolveTemplate(found.namespace, namespaceValues);
  } catch (error) {
    throw new ParameterError(
      `error resolving value ${JSON.stringify(found.namespace)}: ${(error as Error).message}`,
    );
  }
  if (isDNS1123Label(namespace).length > 0)
    throw new ParameterError(
      namespace !== found.namespace
        ? `${JSON.stringify(found.namespace)} resolved to ${JSON.stringify(namespace)} which is not a valid namespace name`
        : `${JSON.stringify(found.namespace)} is not a valid namespace name`,
    );
  const nameValues: Record<string, string> = { "pv.name": pvName };
  if (claim) {
    nameValues["pvc.name"] = claim.metadata?.name ?? "";
    nameValues["pvc.namespace"] = claim.metadata?.namespace ?? "";
    for (const [key, value] of Object.entries(claim.metadata?.annotations ?? {}))
      nameValues[`pvc.annotations['${key}']`] = value;
  }
  let name: string;
  try {
    name = resolveTemplate(found.name, nameValues);
  } catch (error) {
    throw new ParameterError(
      `error resolving value ${JSON.stringify(found.name)}: ${(error as Error).message}`,
    );
  }
  if (isDNS1123Subdomain(name).length > 0)
    throw new ParameterError(
      name !== found.name
        ? `${JSON.stringify(found.name)} resolved to ${JSON.stringify(name)} which is not a valid secret name`
        : `${JSON.stringify(found.name)} is not a valid secret name`,
    );
  return { name, namespace };
}
