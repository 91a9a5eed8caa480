// A compact, deterministic fingerprint of a proto package's wire contract: every message's
// fields (`name:number:type:label`), every enum's values, every service's methods with their
// streaming, the custom-option extensions, and which elements carry a marker option
// (csi_secret, alpha_*). Facts only, no comments or prose, so two protos that fingerprint the
// same are wire-identical and redact the same fields.
//
// The committed src/csi/proto/spec-descriptors.json is this fingerprint of the CSI spec's own
// proto (scripts/spec-fingerprint.ts writes it from the spec text); protos.test.ts compares our
// csi.proto against it, so the check needs no copy of the spec at test time. Used by that test
// and that script only; nothing at runtime imports it.

import { CsikitError } from "../base/index.ts";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import protobuf from "protobufjs";
import { PROTO_DIR, PROTO_FILES } from "./loader.ts";

export const SPEC_VERSION = "1.12.0";

/** Where the committed fingerprint lives. */
export const FINGERPRINT_PATH = join(PROTO_DIR, "spec-descriptors.json");

/**
 * Where the spec text is looked for, in order: `shared/` beside the repository (a CI clone
 * with shared/ next to it), then the workstation's /work/shared.
 */
export const SPEC_CANDIDATES: readonly string[] = [
  resolve(import.meta.dirname, `../../../shared/reference/csi-spec-v${SPEC_VERSION}.md`),
  `/work/shared/reference/csi-spec-v${SPEC_VERSION}.md`,
];

export interface ProtoFingerprint {
  /** Proto package the fingerprint covers ("csi.v1"). */
  package: string;
  /** Full message name → fields sorted by number, each `name:number:type:label`. */
  messages: Record<string, string[]>;
  /** Full enum name → values sorted by number, each `NAME=number`. */
  enums: Record<string, string[]>;
  /** Full service name → methods sorted by name, each `Name(stream? Request) returns (stream? Response)`. */
  services: Record<string, string[]>;
  /** Extensions the package declares: `Extended.name:number:type`. */
  extensions: string[];
  /** Option name without parentheses ("csi_secret") → full names of the elements it marks. */
  markers: Record<string, string[]>;
}

function resolverFor(root: protobuf.Root, protoDir: string): void {
  const protobufDir = dirname(createRequire(import.meta.url).resolve("protobufjs/package.json"));
  root.resolvePath = (_origin, target) =>
    target.startsWith("google/protobuf/") ? join(protobufDir, target) : resolve(protoDir, target);
}

/** Our protos as protobufjs reflection, field names as written (keepCase). */
export function loadOurRoot(): protobuf.Root {
  const root = new protobuf.Root();
  resolverFor(root, PROTO_DIR);
  root.loadSync(
    PROTO_FILES.map((file) => join(PROTO_DIR, file)),
    { keepCase: true },
  );
  root.resolveAll();
  return root;
}

/** The spec's proto: every ```protobuf block of the spec's Markdown, in order, resolved. */
export function parseSpecRoot(markdown: string): protobuf.Root {
  const blocks = [...markdown.matchAll(/```protobuf\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
  if (blocks.length === 0)
    throw new CsikitError("CSIKIT_ERR_PROTO", "the spec text has no ```protobuf blocks");
  const root = new protobuf.Root();
  resolverFor(root, PROTO_DIR);
  const parsed = protobuf.parse(blocks.join("\n"), root, { keepCase: true });
  const imports = [...(parsed.imports ?? []), ...(parsed.weakImports ?? [])];
  // One load for all imports: loadSync resolves the whole root after each call.
  if (imports.length)
    root.loadSync(
      imports.map((name) => root.resolvePath("", name) ?? name),
      { keepCase: true },
    );
  root.resolveAll();
  return root;
}

/** The fingerprint of `pkg` ("csi.v1") in `root`; keys and lists are sorted. */
export function fingerprint(root: protobuf.Root, pkg: string): ProtoFingerprint {
  const namespace = root.lookup(pkg);
  if (!(namespace instanceof protobuf.Namespace))
    throw new CsikitError("CSIKIT_ERR_PROTO", `package ${pkg} is not in the protos`);
  const out: ProtoFingerprint = {
    package: pkg,
    messages: {},
    enums: {},
    services: {},
    extensions: [],
    markers: {},
  };
  const markers = new Map<string, string[]>();
  const mark = (options: Record<string, unknown> | undefined, element: string): void => {
    for (const [key, value] of Object.entries(options ?? {})) {
      const name = /^\((\w+)\)$/.exec(key)?.[1];
      if (name === undefined || value !== true) continue;
      markers.set(name, [...(markers.get(name) ?? []), element]);
    }
  };
  visit(namespace, out, mark);
  out.messages = sortedRecord(out.messages);
  out.enums = sortedRecord(out.enums);
  out.services = sortedRecord(out.services);
  out.extensions.sort();
  out.markers = sortedRecord(Object.fromEntries([...markers].map(([name, list]) => [name, list.sort()])));
  return out;
}

type Mark = (options: Record<string, unknown> | undefined, element: string) => void;

function visit(namespace: protobuf.NamespaceBase, out: ProtoFingerprint, mark: Mark): void {
  for (const nested of namespace.nestedArray) {
    const name = fullName(nested);
    if (nested instanceof protobuf.Type) {
      mark(nested.options, name);
      const fields = nested.fieldsArray.slice().sort((a, b) => a.id - b.id);
      out.messages[name] = fields.map((field) => {
        mark(field.options, `${name}.${field.name}`);
        return `${field.name}:${field.id}:${fieldType(field)}:${label(field)}`;
      });
    } else if (nested instanceof protobuf.Enum) {
      mark(nested.options, name);
      const values = Object.entries(nested.values).sort(([, a], [, b]) => a - b);
      out.enums[name] = values.map(([value, number]) => {
        mark(nested.valuesOptions?.[value], `${name}.${value}`);
        return `${value}=${number}`;
      });
    } else if (nested instanceof protobuf.Service) {
      mark(nested.options, name);
      const methods = nested.methodsArray.slice().sort((a, b) => compare(a.name, b.name));
      out.services[name] = methods.map((method) => {
        mark(method.options, `${name}.${method.name}`);
        const request = `${method.requestStream ? "stream " : ""}${typeName(method.resolvedRequestType, method.requestType)}`;
        const response = `${method.responseStream ? "stream " : ""}${typeName(method.resolvedResponseType, method.responseType)}`;
        return `${method.name}(${request}) returns (${response})`;
      });
    } else if (nested instanceof protobuf.Field && nested.extend !== undefined) {
      const extended = nested.extensionField?.parent ?? null;
      const target = extended ? fullName(extended) : nested.extend.replace(/^\./, "");
      out.extensions.push(`${target}.${nested.name}:${nested.id}:${fieldType(nested)}`);
    }
    if (nested instanceof protobuf.Namespace) visit(nested, out, mark);
  }
}

function fullName(element: protobuf.ReflectionObject): string {
  return element.fullName.replace(/^\./, "");
}

function typeName(resolved: protobuf.ReflectionObject | null | undefined, written: string): string {
  return resolved ? fullName(resolved) : written;
}

function fieldType(field: protobuf.Field): string {
  const value = typeName(field.resolvedType, field.type);
  return field instanceof protobuf.MapField ? `map<${field.keyType},${value}>` : value;
}

/** repeated, map, oneof=<name>, optional (proto3 explicit presence) or singular. */
function label(field: protobuf.Field): string {
  if (field instanceof protobuf.MapField) return "map";
  if (field.repeated) return "repeated";
  if (field.partOf) {
    return field.options?.["proto3_optional"] === true ? "optional" : `oneof=${field.partOf.name}`;
  }
  return "singular";
}

function sortedRecord<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => compare(a, b)));
}

/** Code-unit order, independent of the locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
