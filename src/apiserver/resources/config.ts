// core/v1 secrets, configmaps and serviceaccounts: key rules, size limits, `immutable`,
// Secret type rules and stringData folding (the v1 → internal conversion upstream does).

import { fieldForbidden, fieldInvalid, fieldRequired, fieldTooLong } from "../../api/index.ts";
import type { FieldCause, ResourceDef } from "../rest/resource.ts";
import {
  AGE_COLUMN,
  NAME_COLUMN,
  age,
  column,
  defineResource,
  immutable,
  isRecord,
  metaOf,
  nameOf,
  str,
} from "./common.ts";
import type { Obj } from "./common.ts";
import { goUnmarshalObjectError } from "../rest/go-json.ts";

const CONFIG_KEY_RE = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY_ERR =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/** IsConfigMapKey: the messages upstream gives for a bad data key. */
export function isConfigMapKey(key: string): string[] {
  const errors: string[] = [];
  if (key.length > 253) errors.push("must be no more than 253 characters");
  if (!CONFIG_KEY_RE.test(key)) errors.push(CONFIG_KEY_ERR);
  if (key === ".") errors.push("must not be '.'");
  else if (key === "..") errors.push("must not be '..'");
  else if (key.startsWith("..")) errors.push("must not start with '..'");
  return errors;
}

/** 1 MiB: the total data size limit of a Secret or ConfigMap. */
const MAX_DATA_SIZE = 1024 * 1024;

/** A value's size as upstream counts it: its bytes (decoded, for base64 fields). */
type SizeOf = (value: string) => number;
const utf8Size: SizeOf = (value) => Buffer.byteLength(value, "utf8");
const base64Size: SizeOf = (value) => Buffer.from(value, "base64").length;

function dataKeyCauses(data: unknown, field: string, sizeOf: SizeOf): { causes: FieldCause[]; size: number } {
  const causes: FieldCause[] = [];
  let size = 0;
  if (data === undefined || data === null) return { causes, size };
  if (!isRecord(data)) return { causes: [fieldInvalid(field, data, "must be a map of strings")], size };
  for (const [key, value] of Object.entries(data)) {
    for (const message of isConfigMapKey(key)) causes.push(fieldInvalid(`${field}[${key}]`, key, message));
    if (typeof value !== "string") causes.push(fieldInvalid(`${field}[${key}]`, value, "must be a string"));
    else size += sizeOf(value);
  }
  return { causes, size };
}

function immutableDataRules(object: Obj, old: Obj, dataKeys: readonly string[]): FieldCause[] {
  if (old.immutable !== true) return [];
  const causes: FieldCause[] = [];
  if (object.immutable !== true)
    causes.push(fieldForbidden("immutable", "field is immutable when `immutable` is set"));
  for (const key of dataKeys) {
    if (JSON.stringify(object[key] ?? {}) !== JSON.stringify(old[key] ?? {})) {
      causes.push(fieldForbidden(key, "field is immutable when `immutable` is set"));
    }
  }
  return causes;
}

const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const REDACTED = "<secret contents redacted>";

/** Upstream's ValidateSecret rules of the well-known Secret types. */
function secretTypeCauses(object: Obj, data: Obj): FieldCause[] {
  const present = (key: string): boolean => Object.hasOwn(data, key);
  const bytes = (key: string): Buffer => Buffer.from(str(data[key]), "base64");
  const dockerConfig = (key: string): FieldCause[] => {
    if (!present(key)) return [fieldRequired(`data[${key}]`)];
    // The payload must decode as a JSON object (or null), as json.Unmarshal into a map.
    const error = goUnmarshalObjectError(bytes(key));
    return error === undefined ? [] : [fieldInvalid(`data[${key}]`, REDACTED, error)];
  };
  switch (str(object.type)) {
    case "kubernetes.io/service-account-token": {
      const annotations = metaOf(object).annotations;
      return isRecord(annotations) && str(annotations["kubernetes.io/service-account.name"]) !== ""
        ? []
        : [fieldRequired("metadata.annotations[kubernetes.io/service-account.name]")];
    }
    case "kubernetes.io/dockercfg":
      return dockerConfig(".dockercfg");
    case "kubernetes.io/dockerconfigjson":
      return dockerConfig(".dockerconfigjson");
    case "kubernetes.io/basic-auth":
      // Either key may be empty, but one of them must be there.
      return present("username") || present("password")
        ? []
        : [fieldRequired("data[username]"), fieldRequired("data[password]")];
    case "kubernetes.io/ssh-auth":
      return bytes("ssh-privatekey").length > 0 ? [] : [fieldRequired("data[ssh-privatekey]")];
    case "kubernetes.io/tls":
      return ["tls.crt", "tls.key"]
        .filter((key) => !present(key))
        .map((key) => fieldRequired(`data[${key}]`));
    default:
      return [];
  }
}

export const secrets: ResourceDef = defineResource({
  group: "",
  version: "v1",
  resource: "secrets",
  kind: "Secret",
  namespaced: true,
  defaults(object) {
    if (object.type === undefined || object.type === null || object.type === "") object.type = "Opaque";
    // stringData is write-only: fold it into data (base64), as the v1 conversion does.
    const stringData = object.stringData;
    if (isRecord(stringData)) {
      const data: Obj = isRecord(object.data) ? object.data : {};
      for (const [key, value] of Object.entries(stringData)) {
        // Defined, not assigned: a "__proto__" key is data, not the prototype setter.
        if (typeof value === "string")
          Object.defineProperty(data, key, {
            value: Buffer.from(value, "utf8").toString("base64"),
            enumerable: true,
            writable: true,
            configurable: true,
          });
      }
      object.data = data;
    }
    delete object.stringData;
  },
  validate(object) {
    const { causes, size } = dataKeyCauses(object.data, "data", base64Size);
    const data = isRecord(object.data) ? object.data : {};
    for (const [key, value] of Object.entries(data)) {
      if (typeof value === "string" && !BASE64_RE.test(value)) {
        causes.push(fieldInvalid(`data[${key}]`, "<secret contents redacted>", "illegal base64 data"));
      }
    }
    if (size > MAX_DATA_SIZE) causes.push(fieldTooLong("data", MAX_DATA_SIZE));
    causes.push(...secretTypeCauses(object, data));
    return causes;
  },
  validateUpdate(object, old) {
    return [...immutable("type", object.type, old.type), ...immutableDataRules(object, old, ["data"])];
  },
  fieldSelectors: { type: (object) => str(object.type) },
  specChanged: () => false,
  columns: [
    NAME_COLUMN,
    column(
      "Type",
      "string",
      "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
    ),
    column(
      "Data",
      "string",
      "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
    ),
    AGE_COLUMN,
  ],
  row(object, now) {
    const data = isRecord(object.data) ? object.data : {};
    return [nameOf(object), str(object.type), Object.keys(data).length, age(object, now)];
  },
});

export const configMaps: ResourceDef = defineResource({
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
  shortNames: ["cm"],
  validate(object) {
    const data = dataKeyCauses(object.data, "data", utf8Size);
    const binary = dataKeyCauses(object.binaryData, "binaryData", base64Size);
    const causes = [...data.causes, ...binary.causes];
    if (isRecord(object.data) && isRecord(object.binaryData)) {
      for (const key of Object.keys(object.data)) {
        if (key in object.binaryData)
          causes.push(fieldInvalid(`data[${key}]`, key, "duplicate of key present in binaryData"));
      }
    }
    if (data.size + binary.size > MAX_DATA_SIZE) causes.push(fieldTooLong("", MAX_DATA_SIZE));
    return causes;
  },
  validateUpdate(object, old) {
    return immutableDataRules(object, old, ["data", "binaryData"]);
  },
  specChanged: () => false,
  columns: [
    NAME_COLUMN,
    column(
      "Data",
      "string",
      "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
    ),
    AGE_COLUMN,
  ],
  row(object, now) {
    const count =
      (isRecord(object.data) ? Object.keys(object.data).length : 0) +
      (isRecord(object.binaryData) ? Object.keys(object.binaryData).length : 0);
    return [nameOf(object), count, age(object, now)];
  },
});

export const serviceAccounts: ResourceDef = defineResource({
  group: "",
  version: "v1",
  resource: "serviceaccounts",
  kind: "ServiceAccount",
  namespaced: true,
  shortNames: ["sa"],
  // serviceaccounts/token: TokenRequest, answered by the handler (sa-tokens.ts).
  subresources: ["token"],
  returnDeletedObject: true,
  specChanged: () => false,
  columns: [
    NAME_COLUMN,
    column(
      "Secrets",
      "string",
      'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a "kubernetes.io/enforce-mountable-secrets" annotation set to "true". The "kubernetes.io/enforce-mountable-secrets" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret',
    ),
    AGE_COLUMN,
  ],
  row(object, now) {
    return [nameOf(object), Array.isArray(object.secrets) ? object.secrets.length : 0, age(object, now)];
  },
  patchStrategies: { secrets: { mergeKey: "name" } },
});

export const configResources: readonly ResourceDef[] = Object.freeze([secrets, configMaps, serviceAccounts]);
