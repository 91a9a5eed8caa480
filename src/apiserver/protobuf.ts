// Decoding of the Kubernetes protobuf request encoding for the few kinds kubectl's typed
// clients create with it (`kubectl create namespace|configmap|secret|serviceaccount` send
// `application/vnd.kubernetes.protobuf` bodies and do not fall back to JSON on 415). The
// envelope is the 4 magic bytes "k8s\0" and a runtime.Unknown {typeMeta, raw}; `raw` is the
// object in the field numbers of k8s.io/api's generated.proto. Only the messages below are
// known; anything else is answered 415 as before. Responses stay JSON (clients accept it).

import { badRequest } from "./status.ts";

type FieldType = "string" | "bytes" | "int" | "bool" | "time" | "stringMap" | "bytesMap" | Schema;
interface FieldSpec {
  name: string;
  type: FieldType;
  repeated?: boolean;
}
type Schema = { readonly [field: number]: FieldSpec };

const TIME: Schema = { 1: { name: "seconds", type: "int" }, 2: { name: "nanos", type: "int" } };
const OWNER_REFERENCE: Schema = {
  1: { name: "kind", type: "string" },
  3: { name: "name", type: "string" },
  4: { name: "uid", type: "string" },
  5: { name: "apiVersion", type: "string" },
  6: { name: "controller", type: "bool" },
  7: { name: "blockOwnerDeletion", type: "bool" },
};
const OBJECT_META: Schema = {
  1: { name: "name", type: "string" },
  2: { name: "generateName", type: "string" },
  3: { name: "namespace", type: "string" },
  5: { name: "uid", type: "string" },
  6: { name: "resourceVersion", type: "string" },
  7: { name: "generation", type: "int" },
  8: { name: "creationTimestamp", type: "time" },
  11: { name: "labels", type: "stringMap" },
  12: { name: "annotations", type: "stringMap" },
  13: { name: "ownerReferences", type: OWNER_REFERENCE, repeated: true },
  14: { name: "finalizers", type: "string", repeated: true },
};
const OBJECT_REFERENCE: Schema = {
  1: { name: "kind", type: "string" },
  2: { name: "namespace", type: "string" },
  3: { name: "name", type: "string" },
  4: { name: "uid", type: "string" },
  5: { name: "apiVersion", type: "string" },
  6: { name: "resourceVersion", type: "string" },
  7: { name: "fieldPath", type: "string" },
};
const LOCAL_OBJECT_REFERENCE: Schema = { 1: { name: "name", type: "string" } };

const RESOURCE_ATTRIBUTES: Schema = {
  1: { name: "namespace", type: "string" },
  2: { name: "verb", type: "string" },
  3: { name: "group", type: "string" },
  4: { name: "version", type: "string" },
  5: { name: "resource", type: "string" },
  6: { name: "subresource", type: "string" },
  7: { name: "name", type: "string" },
};
const NON_RESOURCE_ATTRIBUTES: Schema = {
  1: { name: "path", type: "string" },
  2: { name: "verb", type: "string" },
};

const POLICY_RULE: Schema = {
  1: { name: "verbs", type: "string", repeated: true },
  2: { name: "apiGroups", type: "string", repeated: true },
  3: { name: "resources", type: "string", repeated: true },
  4: { name: "resourceNames", type: "string", repeated: true },
  5: { name: "nonResourceURLs", type: "string", repeated: true },
};
const LABEL_SELECTOR: Schema = {
  1: { name: "matchLabels", type: "stringMap" },
  2: {
    name: "matchExpressions",
    type: {
      1: { name: "key", type: "string" },
      2: { name: "operator", type: "string" },
      3: { name: "values", type: "string", repeated: true },
    },
    repeated: true,
  },
};
const ROLE_BINDING: Schema = {
  1: { name: "metadata", type: OBJECT_META },
  2: {
    name: "subjects",
    type: {
      1: { name: "kind", type: "string" },
      2: { name: "apiGroup", type: "string" },
      3: { name: "name", type: "string" },
      4: { name: "namespace", type: "string" },
    },
    repeated: true,
  },
  3: {
    name: "roleRef",
    type: {
      1: { name: "apiGroup", type: "string" },
      2: { name: "kind", type: "string" },
      3: { name: "name", type: "string" },
    },
  },
};

/** The kinds whose protobuf bodies are understood, by "apiVersion/kind". */
const KINDS: Record<string, Schema> = {
  "v1/Namespace": {
    1: { name: "metadata", type: OBJECT_META },
    2: { name: "spec", type: { 1: { name: "finalizers", type: "string", repeated: true } } },
  },
  "v1/ConfigMap": {
    1: { name: "metadata", type: OBJECT_META },
    2: { name: "data", type: "stringMap" },
    3: { name: "binaryData", type: "bytesMap" },
    4: { name: "immutable", type: "bool" },
  },
  "v1/Secret": {
    1: { name: "metadata", type: OBJECT_META },
    2: { name: "data", type: "bytesMap" },
    3: { name: "type", type: "string" },
    4: { name: "stringData", type: "stringMap" },
    5: { name: "immutable", type: "bool" },
  },
  "v1/ServiceAccount": {
    1: { name: "metadata", type: OBJECT_META },
    2: { name: "secrets", type: OBJECT_REFERENCE, repeated: true },
    3: { name: "imagePullSecrets", type: LOCAL_OBJECT_REFERENCE, repeated: true },
    4: { name: "automountServiceAccountToken", type: "bool" },
  },
  // kubectl create role|clusterrole|rolebinding|clusterrolebinding.
  "rbac.authorization.k8s.io/v1/Role": {
    1: { name: "metadata", type: OBJECT_META },
    2: { name: "rules", type: POLICY_RULE, repeated: true },
  },
  "rbac.authorization.k8s.io/v1/ClusterRole": {
    1: { name: "metadata", type: OBJECT_META },
    2: { name: "rules", type: POLICY_RULE, repeated: true },
    3: {
      name: "aggregationRule",
      type: { 1: { name: "clusterRoleSelectors", type: LABEL_SELECTOR, repeated: true } },
    },
  },
  "rbac.authorization.k8s.io/v1/RoleBinding": ROLE_BINDING,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ROLE_BINDING,
  // `kubectl auth can-i`, `kubectl auth whoami` and `kubectl create token` send these.
  "authorization.k8s.io/v1/SelfSubjectAccessReview": {
    1: { name: "metadata", type: OBJECT_META },
    2: {
      name: "spec",
      type: {
        1: { name: "resourceAttributes", type: RESOURCE_ATTRIBUTES },
        2: { name: "nonResourceAttributes", type: NON_RESOURCE_ATTRIBUTES },
      },
    },
  },
  "authorization.k8s.io/v1/SubjectAccessReview": {
    1: { name: "metadata", type: OBJECT_META },
    2: {
      name: "spec",
      type: {
        1: { name: "resourceAttributes", type: RESOURCE_ATTRIBUTES },
        2: { name: "nonResourceAttributes", type: NON_RESOURCE_ATTRIBUTES },
        3: { name: "user", type: "string" },
        4: { name: "groups", type: "string", repeated: true },
        6: { name: "uid", type: "string" },
      },
    },
  },
  "authentication.k8s.io/v1/SelfSubjectReview": { 1: { name: "metadata", type: OBJECT_META } },
  "authentication.k8s.io/v1/TokenRequest": {
    1: { name: "metadata", type: OBJECT_META },
    2: {
      name: "spec",
      type: {
        1: { name: "audiences", type: "string", repeated: true },
        4: { name: "expirationSeconds", type: "int" },
      },
    },
  },
};

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

interface WireField {
  field: number;
  wireType: number;
  varint?: bigint;
  bytes?: Buffer;
}

class Reader {
  #offset = 0;
  readonly #buffer: Buffer;
  constructor(buffer: Buffer) {
    this.#buffer = buffer;
  }
  get done(): boolean {
    return this.#offset >= this.#buffer.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.#offset >= this.#buffer.length || shift > 63n)
        throw badRequest("protobuf body is truncated or malformed");
      const byte = this.#buffer[this.#offset++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  bytes(length: number): Buffer {
    if (this.#offset + length > this.#buffer.length)
      throw badRequest("protobuf body is truncated or malformed");
    const out = this.#buffer.subarray(this.#offset, this.#offset + length);
    this.#offset += length;
    return out;
  }
  field(): WireField {
    const key = this.varint();
    const field = Number(key >> 3n);
    const wireType = Number(key & 7n);
    switch (wireType) {
      case 0:
        return { field, wireType, varint: this.varint() };
      case 1:
        return { field, wireType, bytes: this.bytes(8) };
      case 2:
        return { field, wireType, bytes: this.bytes(Number(this.varint())) };
      case 5:
        return { field, wireType, bytes: this.bytes(4) };
      default:
        throw badRequest(`protobuf body uses unsupported wire type ${wireType}`);
    }
  }
}

function fields(buffer: Buffer): WireField[] {
  const reader = new Reader(buffer);
  const out: WireField[] = [];
  while (!reader.done) out.push(reader.field());
  return out;
}

function decodeMessage(buffer: Buffer, schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const wire of fields(buffer)) {
    const spec = schema[wire.field];
    if (!spec) continue; // unknown fields are dropped, as upstream prunes them
    const value = decodeValue(wire, spec.type);
    if (spec.type === "stringMap" || spec.type === "bytesMap") {
      const [key, entry] = value as [string, unknown];
      const map = (out[spec.name] as Record<string, unknown> | undefined) ?? {};
      map[key] = entry;
      out[spec.name] = map;
    } else if (spec.repeated) {
      out[spec.name] = [...((out[spec.name] as unknown[] | undefined) ?? []), value];
    } else if (!isZero(value)) {
      // Go writes every non-pointer field; JSON (omitempty) would leave zero values out.
      out[spec.name] = value;
    }
  }
  return out;
}

function isZero(value: unknown): boolean {
  return value === "" || value === 0 || value === false || value === undefined;
}

function decodeValue(wire: WireField, type: FieldType): unknown {
  if (typeof type === "object") return decodeMessage(requireBytes(wire), type);
  switch (type) {
    case "string":
      return requireBytes(wire).toString("utf8");
    case "bytes":
      return requireBytes(wire).toString("base64");
    case "int":
      return Number(BigInt.asIntN(64, requireVarint(wire)));
    case "bool":
      return requireVarint(wire) !== 0n;
    case "time": {
      const time = decodeMessage(requireBytes(wire), TIME);
      const seconds = typeof time.seconds === "number" ? time.seconds : 0;
      if (seconds <= 0) return undefined; // the zero time
      return new Date(seconds * 1000).toISOString().replace(".000Z", "Z");
    }
    case "stringMap":
    case "bytesMap": {
      const entry = decodeMessage(requireBytes(wire), {
        1: { name: "key", type: "string" },
        2: { name: "value", type: type === "stringMap" ? "string" : "bytes" },
      });
      return [typeof entry.key === "string" ? entry.key : "", entry.value ?? ""];
    }
  }
}

function requireBytes(wire: WireField): Buffer {
  if (wire.bytes === undefined || wire.wireType !== 2)
    throw badRequest(`protobuf field ${wire.field} has the wrong wire type`);
  return wire.bytes;
}

function requireVarint(wire: WireField): bigint {
  if (wire.varint === undefined) throw badRequest(`protobuf field ${wire.field} has the wrong wire type`);
  return wire.varint;
}

/** True when the body is a protobuf envelope of a kind this module can decode. */
export function decodableProtobufKind(body: Buffer): boolean {
  return protobufTypeOf(body) !== undefined;
}

function protobufTypeOf(
  body: Buffer,
): { key: string; raw: Buffer; apiVersion: string; kind: string } | undefined {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  // A body with the magic but a broken envelope is a bad request, not an unknown format.
  const envelope = body.subarray(MAGIC.length);
  const raw = fields(envelope).find((w) => w.field === 2)?.bytes;
  const unknown = decodeMessage(envelope, {
    1: {
      name: "typeMeta",
      type: { 1: { name: "apiVersion", type: "string" }, 2: { name: "kind", type: "string" } },
    },
  });
  const typeMeta = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const apiVersion = typeMeta.apiVersion ?? "";
  const kind = typeMeta.kind ?? "";
  const key = `${apiVersion}/${kind}`;
  if (!KINDS[key] || raw === undefined) return undefined;
  return { key, raw, apiVersion, kind };
}

/** Decodes a protobuf request body into the JSON object it stands for; undefined for an unknown kind. */
export function decodeProtobufObject(body: Buffer): Record<string, unknown> | undefined {
  const type = protobufTypeOf(body);
  if (!type) return undefined;
  const object = decodeMessage(type.raw, KINDS[type.key]!);
  return { apiVersion: type.apiVersion, kind: type.kind, ...object };
}
