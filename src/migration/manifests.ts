// Manifest translation for people planning a migration (`csikit migrate`): a list of parsed
// manifest objects in, the objects as the cluster's CSI components would see them out.
//   --to csi:     in-tree PVs → CSI PVs; in-tree StorageClasses → the class the CSI driver gets,
//                 with the driver as provisioner; each migratable inline volume of a Pod (or a
//                 workload's pod template) → an extra PersistentVolume: the spec Kubernetes
//                 derives from it (a VolumeAttachment's spec.source.inlineVolumeSpec). The Pod
//                 itself is not changed: Kubernetes never rewrites it either.
//   --to in-tree: CSI PVs of a migration target driver → their in-tree form. StorageClasses have
//                 no reverse translation upstream and pass through, with a note.
// `kind: List` documents are translated item by item. Anything else passes through unchanged.

import type { PersistentVolume, StorageClass, Volume } from "../api/index.ts";
import { TranslationError } from "./errors.ts";
import {
  isInlineMigratable,
  isMigratedCSIDriverByName,
  pluginByInTreeName,
  translateCSIPVToInTree,
  translateInTreeInlineVolumeToCSI,
  translateInTreePVToCSI,
  translateInTreeStorageClassToCSI,
} from "./translator.ts";
import { isRecord } from "../base/index.ts";

export type MigrationDirection = "csi" | "in-tree";

export interface TranslatedObject {
  object: unknown;
  /** Said before the object in the output (a YAML comment); undefined for none. */
  comment?: string;
}

export interface ManifestTranslation {
  objects: TranslatedObject[];
  /** How many objects were translated (or derived), for the summary line. */
  translated: number;
  /** Objects left as they were for a reason worth telling (one line each). */
  notes: string[];
}

type Obj = Record<string, unknown>;

function isPersistentVolume(obj: unknown): obj is PersistentVolume {
  return isRecord(obj) && obj.kind === "PersistentVolume" && isRecord(obj.spec);
}

function isStorageClass(obj: unknown): obj is StorageClass {
  return isRecord(obj) && obj.kind === "StorageClass" && typeof obj.provisioner === "string";
}

function describe(obj: Obj): string {
  const meta = isRecord(obj.metadata) ? obj.metadata : {};
  const ns = typeof meta.namespace === "string" && meta.namespace !== "" ? `${meta.namespace}/` : "";
  const name = typeof meta.name === "string" ? meta.name : "";
  return `${typeof obj.kind === "string" ? obj.kind : "object"} ${JSON.stringify(ns + name)}`;
}

/** The pod spec of a Pod or of a workload's pod template. */
function podSpecOf(obj: Obj): Obj | undefined {
  const spec = isRecord(obj.spec) ? obj.spec : undefined;
  if (spec === undefined) return undefined;
  switch (obj.kind) {
    case "Pod":
      return spec;
    case "PodTemplate":
      return isRecord(obj.template) && isRecord(obj.template.spec) ? obj.template.spec : undefined;
    case "CronJob": {
      const job = isRecord(spec.jobTemplate) ? spec.jobTemplate : undefined;
      const template =
        job !== undefined && isRecord(job.spec) && isRecord(job.spec.template)
          ? job.spec.template
          : undefined;
      return template !== undefined && isRecord(template.spec) ? template.spec : undefined;
    }
    default:
      return isRecord(spec.template) && isRecord(spec.template.spec) ? spec.template.spec : undefined;
  }
}

function inlineVolumesToCSI(obj: Obj, out: ManifestTranslation): void {
  const podSpec = podSpecOf(obj);
  const volumes = podSpec !== undefined && Array.isArray(podSpec.volumes) ? podSpec.volumes : [];
  const meta = isRecord(obj.metadata) ? obj.metadata : {};
  const namespace = typeof meta.namespace === "string" ? meta.namespace : "";
  for (const volume of volumes) {
    if (!isRecord(volume) || !isInlineMigratable(volume as Volume)) continue;
    const pv = translateInTreeInlineVolumeToCSI(volume as Volume, namespace);
    out.objects.push({
      object: { apiVersion: "v1", kind: "PersistentVolume", ...pv },
      comment: ` inline volume ${JSON.stringify(volume.name)} of ${describe(obj)}, as Kubernetes translates it for the CSI driver (VolumeAttachment spec.source.inlineVolumeSpec); the ${String(obj.kind)} itself is unchanged`,
    });
    out.translated++;
  }
}

function translateOne(obj: Obj, to: MigrationDirection, out: ManifestTranslation): void {
  if (obj.kind === "List" && Array.isArray(obj.items)) {
    const inner: ManifestTranslation = { objects: [], translated: 0, notes: out.notes };
    for (const item of obj.items) if (isRecord(item)) translateOne(item, to, inner);
    out.objects.push({ object: { ...obj, items: inner.objects.map((o) => o.object) } });
    out.translated += inner.translated;
    return;
  }
  if (isPersistentVolume(obj)) {
    if (to === "csi" && translateInTreePVToCSIIfMigratable(obj, out)) return;
    const driver = obj.spec?.csi?.driver;
    if (to === "in-tree" && driver !== undefined && isMigratedCSIDriverByName(driver)) {
      out.objects.push({ object: translateCSIPVToInTree(obj) });
      out.translated++;
      return;
    }
  } else if (isStorageClass(obj)) {
    const plugin = pluginByInTreeName(obj.provisioner);
    if (to === "csi" && plugin !== undefined) {
      const sc = translateInTreeStorageClassToCSI(plugin.inTreePluginName, obj);
      // The translated class is what the driver's provisioner works from; as a manifest it
      // must also name the driver, or nothing would provision its claims.
      sc.provisioner = plugin.csiDriverName;
      out.objects.push({ object: sc });
      out.translated++;
      return;
    }
    if (to === "in-tree" && isMigratedCSIDriverByName(obj.provisioner))
      out.notes.push(
        `${describe(obj)}: left unchanged: upstream has no CSI → in-tree StorageClass translation`,
      );
  } else if (to === "csi") {
    out.objects.push({ object: obj });
    inlineVolumesToCSI(obj, out);
    return;
  }
  out.objects.push({ object: obj });
}

function translateInTreePVToCSIIfMigratable(pv: PersistentVolume, out: ManifestTranslation): boolean {
  let csi: PersistentVolume;
  try {
    csi = translateInTreePVToCSI(pv);
  } catch (error) {
    // Not an in-tree PV of a migratable plugin: it passes through; a malformed one is an error.
    if (error instanceof TranslationError && /no migratable in-tree source/.test(error.message)) return false;
    throw error;
  }
  out.objects.push({ object: csi });
  out.translated++;
  return true;
}

/** Translates manifest documents; a TranslationError names the document (1-based) and object. */
export function translateManifests(
  documents: readonly unknown[],
  to: MigrationDirection,
): ManifestTranslation {
  const out: ManifestTranslation = { objects: [], translated: 0, notes: [] };
  documents.forEach((doc, index) => {
    if (doc === null || doc === undefined) return;
    if (!isRecord(doc)) throw new TranslationError(`document ${index + 1}: not a Kubernetes object`);
    try {
      translateOne(doc, to, out);
    } catch (error) {
      if (error instanceof TranslationError)
        throw new TranslationError(`document ${index + 1} (${describe(doc)}): ${error.message}`);
      throw error;
    }
  });
  return out;
}
