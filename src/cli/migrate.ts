// `csikit migrate`: translates in-tree volume objects in manifests to what the CSI components see
// (or CSI PVs back to in-tree), for people planning a migration. Reads multi-document YAML (or
// JSON) from -f or stdin, writes multi-document YAML to stdout; notes go to stderr. The logic
// lives in src/migration (translateManifests); this file reads, parses and prints.

import { readFile } from "node:fs/promises";
import { Document, parseAllDocuments } from "yaml";
import { FlagError } from "../base/index.ts";
import { TranslationError, translateManifests, type MigrationDirection } from "../migration/index.ts";
import type { Command } from "./command.ts";

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Parses every document; a syntax error names the source and the document. */
export function parseManifests(text: string, source: string): unknown[] {
  const documents = parseAllDocuments(text);
  if (!Array.isArray(documents)) return [];
  return documents.map((doc, index) => {
    if (doc.errors.length > 0)
      throw new TranslationError(`${source}: document ${index + 1}: ${doc.errors[0]!.message}`);
    return doc.toJS() as unknown;
  });
}

/** The translated objects as multi-document YAML, each with its comment. */
export function formatManifests(objects: readonly { object: unknown; comment?: string }[]): string {
  return objects
    .map(({ object, comment }) => {
      const doc = new Document(object);
      if (comment !== undefined) doc.commentBefore = comment;
      return doc.toString({ lineWidth: 0 });
    })
    .join("---\n");
}

export const migrateCommand: Command = {
  name: "migrate",
  summary: "Translate in-tree volume objects in manifests to their CSI form (or back), as CSI migration does",
  usage: "csikit migrate --to csi|in-tree [-f manifest.yaml]",
  description:
    "Translates PersistentVolumes, StorageClasses and pods' inline volumes with csikit's twin of " +
    "k8s.io/csi-translation-lib (Kubernetes 1.32 plugin table: GCE PD, AWS EBS, Cinder, Azure Disk, Azure File, " +
    "vSphere, Portworx). --to csi: in-tree PVs become CSI PVs, in-tree StorageClasses the class the driver " +
    "provisions from (provisioner set to the driver), and each migratable inline volume of a Pod or pod template " +
    "is followed by the PersistentVolume Kubernetes derives from it (the Pod is unchanged). --to in-tree: CSI PVs " +
    "of migration target drivers become in-tree PVs. Other objects pass through. Reads stdin when -f is - or " +
    "not given; writes multi-document YAML to stdout.",
  flags: {
    to: { type: "string", help: "Direction: csi (in-tree → CSI) or in-tree (CSI → in-tree). Required." },
    f: {
      type: "string",
      default: "-",
      help: "Manifest file to read (multi-document YAML or JSON); - reads stdin.",
    },
    filename: { type: "string", help: "Alias of -f." },
  },
  async run({ flags, stdout }) {
    const to = flags.string("to");
    if (to !== "csi" && to !== "in-tree")
      throw new FlagError(`flag -to is required and must be csi or in-tree, got ${JSON.stringify(to)}`);
    const file = flags.isSet("filename") ? flags.string("filename") : flags.string("f");
    const source = file === "-" ? "stdin" : file;
    try {
      const text = file === "-" ? await readStdin() : await readFile(file, "utf8");
      const result = translateManifests(parseManifests(text, source), to satisfies MigrationDirection);
      stdout.write(formatManifests(result.objects));
      for (const note of result.notes) process.stderr.write(`csikit migrate: ${note}\n`);
      return 0;
    } catch (error) {
      if (error instanceof TranslationError || (error as NodeJS.ErrnoException).code === "ENOENT") {
        process.stderr.write(`csikit migrate: ${source}: ${(error as Error).message}\n`);
        return 1;
      }
      throw error;
    }
  },
};
