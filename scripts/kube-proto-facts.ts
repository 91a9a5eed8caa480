// Writes src/apiserver/encoding/proto/**/generated.proto: the Kubernetes API messages the embedded API
// server speaks, pruned to what its served kinds reach. The facts (message names, field
// names, numbers, types) are read from the FileDescriptorProtos that every Go client embeds
// gzipped in its binary (generated.pb.go registers them), here from a kubectl 1.32 binary:
// no comments exist in a descriptor, so the emitted files carry only our own header.
//
//   node scripts/kube-proto-facts.ts [path/to/kubectl]
//
// Run it when moving to a new Kubernetes minor; `npm run gen:proto` then regenerates the codec.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { createRequire } from "node:module";
import { parseProgramFlags } from "../src/cli/command.ts";

const require = createRequire(import.meta.url);
// protobufjs's descriptor extension has no type declarations of its own.
const descriptor = require("protobufjs/ext/descriptor") as {
  FileDescriptorProto: {
    decode(bytes: Uint8Array): unknown;
    toObject(message: unknown, options: Record<string, unknown>): FileProto;
  };
};

interface FieldProto {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName?: string;
}
interface MessageProto {
  name: string;
  field?: FieldProto[];
  nestedType?: MessageProto[];
  options?: { mapEntry?: boolean };
}
interface FileProto {
  name: string;
  package: string;
  dependency?: string[];
  messageType?: MessageProto[];
  options?: { goPackage?: string };
}

const ROOT = resolve(import.meta.dirname, "..");
const OUT_DIR = join(ROOT, "src/apiserver/encoding/proto");

/** The kinds csikit's API server serves (and the envelopes around them), by full proto name. */
const ROOTS: readonly string[] = [
  ...[
    "Namespace",
    "Node",
    "Pod",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Event",
  ].flatMap((kind) => [`k8s.io.api.core.v1.${kind}`, `k8s.io.api.core.v1.${kind}List`]),
  "k8s.io.api.core.v1.List",
  "k8s.io.api.core.v1.Binding",
  ...["StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "CSIStorageCapacity"].flatMap((kind) => [
    `k8s.io.api.storage.v1.${kind}`,
    `k8s.io.api.storage.v1.${kind}List`,
  ]),
  "k8s.io.api.coordination.v1.Lease",
  "k8s.io.api.coordination.v1.LeaseList",
  "k8s.io.api.events.v1.Event",
  "k8s.io.api.events.v1.EventList",
  ...["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"].flatMap((kind) => [
    `k8s.io.api.apps.v1.${kind}`,
    `k8s.io.api.apps.v1.${kind}List`,
  ]),
  ...["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"].flatMap((kind) => [
    `k8s.io.api.rbac.v1.${kind}`,
    `k8s.io.api.rbac.v1.${kind}List`,
  ]),
  // The /scale subresource of statefulsets, deployments and replicasets answers this kind.
  "k8s.io.api.autoscaling.v1.Scale",
  "k8s.io.api.authentication.v1.TokenRequest",
  "k8s.io.api.authentication.v1.TokenReview",
  "k8s.io.api.authentication.v1.SelfSubjectReview",
  "k8s.io.api.authorization.v1.SubjectAccessReview",
  "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
  "k8s.io.api.authorization.v1.LocalSubjectAccessReview",
  ...[
    "Status",
    "WatchEvent",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
    "PartialObjectMetadata",
    "PartialObjectMetadataList",
    "MicroTime",
  ].map((name) => `k8s.io.apimachinery.pkg.apis.meta.v1.${name}`),
  "k8s.io.apimachinery.pkg.runtime.Unknown",
];

/**
 * storage.k8s.io/v1 VolumeAttributesClass is newer than the 1.32 descriptors (GA in 1.34):
 * its v1 message keeps the alpha/beta field numbers, so it is emitted from the v1alpha1 facts
 * under the v1 package.
 */
const BORROWED: Readonly<Record<string, string>> = {
  "k8s.io.api.storage.v1.VolumeAttributesClass": "k8s.io.api.storage.v1alpha1.VolumeAttributesClass",
  "k8s.io.api.storage.v1.VolumeAttributesClassList": "k8s.io.api.storage.v1alpha1.VolumeAttributesClassList",
};

function readDescriptors(binary: string): Map<string, FileProto> {
  const bytes = readFileSync(binary);
  const files = new Map<string, FileProto>();
  const magic = Buffer.from([0x1f, 0x8b, 0x08]);
  for (let at = bytes.indexOf(magic); at >= 0; at = bytes.indexOf(magic, at + 3)) {
    let file: FileProto;
    try {
      const raw = gunzipSync(bytes.subarray(at, at + 256 * 1024), { finishFlush: 2 });
      file = descriptor.FileDescriptorProto.toObject(descriptor.FileDescriptorProto.decode(raw), {
        enums: String,
        longs: String,
      });
    } catch {
      continue; // not a descriptor, just bytes that look like a gzip header
    }
    if (!file.name?.startsWith("k8s.io/") || !file.name.endsWith("/generated.proto")) continue;
    const known = files.get(file.name);
    if (!known || (known.messageType?.length ?? 0) < (file.messageType?.length ?? 0))
      files.set(file.name, file);
  }
  return files;
}

interface Located {
  file: FileProto;
  message: MessageProto;
}

function main(): void {
  const flags = parseProgramFlags(
    "kube-proto-facts",
    "node scripts/kube-proto-facts.ts [KUBECTL]",
    {},
    "Writes src/apiserver/encoding/proto/**/generated.proto, the Kubernetes API messages the embedded API server speaks, from the descriptors compiled into a kubectl binary (default /usr/bin/kubectl); then run npm run gen:proto.",
  );
  const binary = flags.parsed.positionals[0] ?? "/usr/bin/kubectl";
  const files = readDescriptors(binary);
  const byName = new Map<string, Located>();
  for (const file of files.values()) {
    for (const message of file.messageType ?? [])
      byName.set(`${file.package}.${message.name}`, { file, message });
  }
  const wanted = new Set<string>();
  const visit = (name: string): void => {
    if (wanted.has(name)) return;
    const source = byName.get(BORROWED[name] ?? name);
    if (!source) throw new Error(`no descriptor for ${name} in ${binary}`);
    wanted.add(name);
    const messages = [source.message, ...(source.message.nestedType ?? [])];
    for (const message of messages) {
      for (const field of message.field ?? []) {
        if (!field.typeName) continue;
        const target = field.typeName.replace(/^\./, "");
        const nested = (source.message.nestedType ?? []).some(
          (n) => `${source.file.package}.${source.message.name}.${n.name}` === target,
        );
        if (!nested) visit(target.replace(BORROWED_PACKAGE_FROM, BORROWED_PACKAGE_TO));
      }
    }
  };
  for (const name of [...ROOTS, ...Object.keys(BORROWED)]) visit(name);

  const packages = new Map<string, string[]>();
  for (const name of wanted) {
    const pkg = name.slice(0, name.lastIndexOf("."));
    packages.set(pkg, [...(packages.get(pkg) ?? []), name]);
  }
  for (const [pkg, names] of packages) {
    const path = pkg
      .replace(/^k8s\.io\./, "k8s.io/")
      .replaceAll(".", "/")
      .replace("k8s/io/", "k8s.io/");
    const out = join(OUT_DIR, path, "generated.proto");
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, emitFile(pkg, names.sort(), byName));
    console.log(`kube-proto-facts: ${out.slice(ROOT.length + 1)} (${names.length} messages)`);
  }
}

const BORROWED_PACKAGE_FROM = /^k8s\.io\.api\.storage\.v1alpha1\./;
const BORROWED_PACKAGE_TO = "k8s.io.api.storage.v1.";

const SCALARS: Readonly<Record<string, string>> = {
  TYPE_STRING: "string",
  TYPE_BYTES: "bytes",
  TYPE_BOOL: "bool",
  TYPE_INT32: "int32",
  TYPE_INT64: "int64",
  TYPE_UINT32: "uint32",
  TYPE_UINT64: "uint64",
  TYPE_DOUBLE: "double",
  TYPE_FLOAT: "float",
};

function typeOf(field: FieldProto, pkg: string): string {
  if (field.typeName) {
    const name = field.typeName.replace(/^\./, "").replace(BORROWED_PACKAGE_FROM, BORROWED_PACKAGE_TO);
    return name.startsWith(`${pkg}.`) ? name.slice(pkg.length + 1) : name;
  }
  const scalar = SCALARS[field.type];
  if (!scalar) throw new Error(`unexpected field type ${field.type} of ${field.name}`);
  return scalar;
}

function emitFile(pkg: string, names: string[], byName: Map<string, Located>): string {
  const imports = new Set<string>();
  const body: string[] = [];
  for (const name of names) {
    const { message } = byName.get(BORROWED[name] ?? name)!;
    body.push(`message ${message.name} {`);
    const entries = new Map(
      (message.nestedType ?? []).filter((n) => n.options?.mapEntry).map((n) => [n.name, n]),
    );
    for (const field of message.field ?? []) {
      const entryName = field.typeName?.split(".").pop() ?? "";
      const entry = entries.get(entryName);
      if (field.label === "LABEL_REPEATED" && entry) {
        const [key, value] = entry.field!;
        body.push(`  map<${typeOf(key!, pkg)}, ${typeOf(value!, pkg)}> ${field.name} = ${field.number};`);
      } else {
        const label = field.label === "LABEL_REPEATED" ? "repeated" : "optional";
        body.push(`  ${label} ${typeOf(field, pkg)} ${field.name} = ${field.number};`);
      }
      if (field.typeName) {
        const target = field.typeName.replace(/^\./, "").replace(BORROWED_PACKAGE_FROM, BORROWED_PACKAGE_TO);
        const targetPkg = target.slice(0, target.lastIndexOf("."));
        if (!entry && targetPkg !== pkg && !target.startsWith(`${pkg}.${message.name}.`))
          imports.add(targetPkg);
      }
      if (entry) {
        for (const part of entry.field ?? []) {
          if (!part.typeName) continue;
          const target = part.typeName.replace(/^\./, "");
          const targetPkg = target.slice(0, target.lastIndexOf("."));
          if (targetPkg !== pkg) imports.add(targetPkg);
        }
      }
    }
    body.push("}", "");
  }
  const header = [
    "// Generated by scripts/kube-proto-facts.ts from the descriptors in a Kubernetes 1.32 Go",
    "// binary: names, numbers and types are upstream's, pruned to the messages csikit's API",
    "// server reaches from the kinds it serves. Regenerate rather than edit.",
    'syntax = "proto2";',
    "",
    `package ${pkg};`,
    "",
    ...[...imports]
      .sort()
      .map(
        (dep) =>
          `import "${dep.replace("k8s.io.", "k8s.io/").replaceAll(".", "/").replace("k8s/io/", "k8s.io/")}/generated.proto";`,
      ),
    ...(imports.size ? [""] : []),
    `option go_package = "${pkg.replace("k8s.io.", "k8s.io/").replaceAll(".", "/").replace("k8s/io/", "k8s.io/")}";`,
    "",
  ];
  return [...header, ...body].join("\n").trimEnd() + "\n";
}

main();
