// CSI migration's feature gates as Kubernetes 1.32 has them, parsed in one place for every
// csikit component's `--feature-gates`, and the decisions built on them: is migration on for a
// plugin in this component, is it complete (in-tree code unregistered), which plugins a node
// announces in its CSINode's migrated-plugins annotation, and whether a given node migrated a
// plugin (the seed's "Detection of migration status for a plugin").
//
// At 1.32 only Portworx still has gates. CSIMigration and the other per-plugin gates graduated
// to GA, were locked to true and were then removed: for GCE PD, AWS EBS, Azure Disk, Azure File,
// Cinder and vSphere migration is simply always on. Their InTreePlugin<X>Unregister gates left
// with the in-tree plugins' code. Setting a removed gate is an error that says so.

import type { CSINode } from "../api/index.ts";
import { ANNOTATIONS } from "../api/index.ts";
import { TranslationError } from "./errors.ts";
import { IN_TREE_PLUGINS, PORTWORX_IN_TREE_PLUGIN_NAME } from "./plugins/index.ts";

export type FeatureStage = "ALPHA" | "BETA" | "GA" | "DEPRECATED";

export interface FeatureGateSpec {
  readonly default: boolean;
  readonly stage: FeatureStage;
  /** A locked gate cannot be set to anything but its default. */
  readonly locked: boolean;
}

/** The migration gates Kubernetes 1.32 knows (kube-controller-manager and kubelet). */
export const MIGRATION_FEATURE_GATES: Readonly<Record<string, FeatureGateSpec>> = Object.freeze({
  CSIMigrationPortworx: Object.freeze({ default: true, stage: "BETA", locked: false }),
  InTreePluginPortworxUnregister: Object.freeze({ default: false, stage: "ALPHA", locked: false }),
});

/** Migration gates that no longer exist at 1.32, with what that means. */
export const REMOVED_MIGRATION_FEATURE_GATES: Readonly<Record<string, string>> = Object.freeze({
  CSIMigration: "GA and removed upstream: CSI migration is always on",
  CSIMigrationGCE: "GA and removed upstream: GCE PD migration is always on",
  CSIMigrationAWS: "GA and removed upstream: AWS EBS migration is always on",
  CSIMigrationAzureDisk: "GA and removed upstream: Azure Disk migration is always on",
  CSIMigrationAzureFile: "GA and removed upstream: Azure File migration is always on",
  CSIMigrationOpenStack: "GA and removed upstream: Cinder migration is always on",
  CSIMigrationvSphere: "GA and removed upstream: vSphere migration is always on",
  CSIMigrationRBD: "removed upstream with the in-tree RBD plugin",
  InTreePluginGCEUnregister: "removed upstream with the in-tree GCE PD plugin",
  InTreePluginAWSUnregister: "removed upstream with the in-tree AWS EBS plugin",
  InTreePluginAzureDiskUnregister: "removed upstream with the in-tree Azure Disk plugin",
  InTreePluginAzureFileUnregister: "removed upstream with the in-tree Azure File plugin",
  InTreePluginOpenStackUnregister: "removed upstream with the in-tree Cinder plugin",
  InTreePluginvSphereUnregister: "removed upstream with the in-tree vSphere plugin",
  InTreePluginRBDUnregister: "removed upstream with the in-tree RBD plugin",
});

/** The resolved gates of one component: every known gate has a value. */
export type FeatureGates = Readonly<Record<string, boolean>>;

/**
 * Resolves `--feature-gates` values against the known gates (the migration gates plus a
 * component's own): unknown and removed gates and changes to locked gates are errors naming
 * the gate, as upstream's component-base rejects them.
 */
export function resolveFeatureGates(
  requested: Readonly<Record<string, boolean>>,
  known: Readonly<Record<string, FeatureGateSpec>> = MIGRATION_FEATURE_GATES,
): FeatureGates {
  const gates: Record<string, boolean> = {};
  for (const [name, spec] of Object.entries(known)) gates[name] = spec.default;
  for (const [name, value] of Object.entries(requested)) {
    const spec = known[name];
    if (spec === undefined) {
      const removed = REMOVED_MIGRATION_FEATURE_GATES[name];
      throw new TranslationError(
        removed !== undefined
          ? `unrecognized feature gate: ${name} (${removed})`
          : `unrecognized feature gate: ${name}`,
      );
    }
    if (spec.locked && value !== spec.default)
      throw new TranslationError(
        `cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`,
      );
    gates[name] = value;
  }
  return Object.freeze(gates);
}

/** `--feature-gates` as parsed by a `map` flag (Name → "true"/"false"), resolved. */
export function parseFeatureGatesFlag(
  raw: Readonly<Record<string, string>>,
  known: Readonly<Record<string, FeatureGateSpec>> = MIGRATION_FEATURE_GATES,
): FeatureGates {
  const requested: Record<string, boolean> = {};
  for (const [name, text] of Object.entries(raw)) {
    const lower = text.toLowerCase();
    if (lower !== "true" && lower !== "false")
      throw new TranslationError(`invalid value of ${name}=${text}, want true or false`);
    requested[name] = lower === "true";
  }
  return resolveFeatureGates(requested, known);
}

/** The `Name=true|false (STAGE - default=…)` list a --feature-gates help text shows. */
export function featureGatesHelp(
  known: Readonly<Record<string, FeatureGateSpec>> = MIGRATION_FEATURE_GATES,
): string {
  return Object.entries(known)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, spec]) => `${name}=true|false (${spec.stage} - default=${spec.default})`)
    .join(", ");
}

function gate(gates: FeatureGates, name: string): boolean {
  return gates[name] ?? MIGRATION_FEATURE_GATES[name]?.default ?? false;
}

/** Whether this component routes the in-tree plugin's volumes to its CSI driver. */
export function isMigrationEnabledForPlugin(gates: FeatureGates, inTreePluginName: string): boolean {
  if (inTreePluginName === PORTWORX_IN_TREE_PLUGIN_NAME) return gate(gates, "CSIMigrationPortworx");
  return IN_TREE_PLUGINS.some((p) => p.inTreePluginName === inTreePluginName);
}

/**
 * Whether migration is complete for the plugin (its in-tree code unregistered everywhere), so
 * a controller need not ask each node: always for the plugins whose in-tree code is gone,
 * InTreePluginPortworxUnregister for Portworx.
 */
export function isMigrationCompleteForPlugin(gates: FeatureGates, inTreePluginName: string): boolean {
  if (!isMigrationEnabledForPlugin(gates, inTreePluginName)) return false;
  if (inTreePluginName === PORTWORX_IN_TREE_PLUGIN_NAME) return gate(gates, "InTreePluginPortworxUnregister");
  return true;
}

/** The in-tree plugins this component migrates, sorted (the CSINode annotation's value order). */
export function migratedPlugins(gates: FeatureGates): string[] {
  return IN_TREE_PLUGINS.map((p) => p.inTreePluginName)
    .filter((name) => isMigrationEnabledForPlugin(gates, name))
    .sort();
}

export const MIGRATED_PLUGINS_ANNOTATION = ANNOTATIONS.migratedPlugins.key;

/**
 * Sets (or, with no plugins, removes) the CSINode's migrated-plugins annotation, as the
 * kubelet's nodeinfomanager does on every CSINode write. Returns whether it changed anything.
 */
export function setMigratedPluginsAnnotation(csiNode: CSINode, plugins: readonly string[]): boolean {
  const annotations = csiNode.metadata?.annotations ?? {};
  const want = [...plugins].sort().join(",");
  const have = annotations[MIGRATED_PLUGINS_ANNOTATION];
  if (want === "" ? have === undefined : have === want) return false;
  const next = { ...annotations };
  if (want === "") delete next[MIGRATED_PLUGINS_ANNOTATION];
  else next[MIGRATED_PLUGINS_ANNOTATION] = want;
  csiNode.metadata = { ...csiNode.metadata, annotations: next };
  return true;
}

/** The plugins a CSINode's `storage.alpha.kubernetes.io/migrated-plugins` annotation lists. */
export function migratedPluginsOnNode(csiNode: CSINode | undefined): Set<string> {
  const value = csiNode?.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION] ?? "";
  return new Set(value.split(",").filter((name) => name !== ""));
}

/**
 * The seed's per-node decision (upstream's isCSIMigrationSupportedOnNode): migrated when the
 * controller considers migration complete for the plugin; otherwise only when the node's CSINode
 * says its kubelet migrated it. No CSINode (an old or not yet registered kubelet) → in-tree.
 */
export function isMigratedOnNode(
  gates: FeatureGates,
  inTreePluginName: string,
  csiNode: CSINode | undefined,
): boolean {
  if (!isMigrationEnabledForPlugin(gates, inTreePluginName)) return false;
  if (isMigrationCompleteForPlugin(gates, inTreePluginName)) return true;
  return migratedPluginsOnNode(csiNode).has(inTreePluginName);
}
