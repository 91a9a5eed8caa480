// Topology rewriting shared by the zonal plugins: in-tree PVs carry the Kubernetes zone/region
// labels (GA `topology.kubernetes.io/*` or beta `failure-domain.beta.kubernetes.io/*`) in node
// affinity and in PV labels; their CSI twins carry the driver's own topology key. These helpers
// move between the two the way upstream csi-translation-lib does, on a PV the caller owns.

import type { NodeSelectorRequirement, PersistentVolume, TopologySelectorTerm } from "../api/index.ts";
import { TranslationError } from "./errors.ts";

export const LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone";
export const LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region";
export const LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone";
export const LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region";
/** Separator of several zones in one zone label value (a regional disk's PV). */
export const MULTI_ZONE_DELIMITER = "__";

/** A function deriving the one region of a set of zones; throws when there is not exactly one. */
export type RegionParser = (zones: readonly string[]) => string;

function terms(pv: PersistentVolume) {
  return pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
}

/** Whether any node-affinity term of the PV has a requirement on key. */
export function topologyKeyExists(pv: PersistentVolume, key: string): boolean {
  return terms(pv).some((term) => (term.matchExpressions ?? []).some((r) => r.key === key));
}

/**
 * Which label generation (GA or beta) the PV uses, affinity first, then labels; GA when neither
 * says. Returns [zoneLabel, regionLabel].
 */
export function topologyLabels(pv: PersistentVolume): [string, string] {
  const labels = pv.metadata?.labels ?? {};
  if (topologyKeyExists(pv, LABEL_TOPOLOGY_ZONE)) return [LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION];
  if (topologyKeyExists(pv, LABEL_BETA_ZONE)) return [LABEL_BETA_ZONE, LABEL_BETA_REGION];
  if (Object.hasOwn(labels, LABEL_TOPOLOGY_ZONE)) return [LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION];
  if (Object.hasOwn(labels, LABEL_BETA_ZONE)) return [LABEL_BETA_ZONE, LABEL_BETA_REGION];
  return [LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION];
}

/** All distinct values of key over every term, sorted (terms are ORed, so values collapse). */
export function topologyValues(pv: PersistentVolume, key: string): string[] {
  const values = new Set<string>();
  for (const term of terms(pv))
    for (const r of term.matchExpressions ?? [])
      if (r.key === key) for (const v of r.values ?? []) values.add(v);
  return [...values].sort();
}

/** Renames every requirement key oldKey to newKey (values untouched). */
export function replaceTopology(pv: PersistentVolume, oldKey: string, newKey: string): void {
  for (const term of terms(pv))
    for (const r of term.matchExpressions ?? []) if (r.key === oldKey) r.key = newKey;
}

/** Appends `key In zones` (trimmed, deduplicated, sorted) to every term, creating one if none. */
export function addTopology(pv: PersistentVolume, key: string, zones: readonly string[]): void {
  const values = [...new Set(zones.map((z) => z.trim()).filter((z) => z !== ""))].sort();
  if (values.length === 0) throw new TranslationError("there are no valid zones to add to pv");
  const spec = (pv.spec ??= {});
  const required = ((spec.nodeAffinity ??= {}).required ??= { nodeSelectorTerms: [] });
  if (required.nodeSelectorTerms.length === 0) required.nodeSelectorTerms.push({});
  for (const term of required.nodeSelectorTerms)
    (term.matchExpressions ??= []).push({ key, operator: "In", values: [...values] });
}

function setLabelIfAbsent(pv: PersistentVolume, key: string, value: string): void {
  const metadata = (pv.metadata ??= {});
  const labels = (metadata.labels ??= {});
  if (!Object.hasOwn(labels, key)) labels[key] = value;
}

/**
 * In-tree → CSI: the zone requirement (or, without one, the zone label) becomes csiKey; a beta
 * region requirement becomes the GA region so new nodes, which lack beta labels, still match.
 */
export function translateTopologyToCSI(pv: PersistentVolume, csiKey: string): void {
  const [zoneLabel, regionLabel] = topologyLabels(pv);
  if (topologyValues(pv, zoneLabel).length > 0) {
    replaceTopology(pv, zoneLabel, csiKey);
  } else {
    const label = pv.metadata?.labels?.[zoneLabel];
    if (label !== undefined) addTopology(pv, csiKey, label.split(MULTI_ZONE_DELIMITER));
  }
  if (regionLabel === LABEL_BETA_REGION && topologyValues(pv, regionLabel).length > 0)
    replaceTopology(pv, regionLabel, LABEL_TOPOLOGY_REGION);
}

/** Adds a region requirement (from regionParser over the term's zones) to terms lacking one. */
function addRegionTopology(pv: PersistentVolume, regionParser: RegionParser): void {
  const [zoneLabel, regionLabel] = topologyLabels(pv);
  for (const term of terms(pv)) {
    const expressions = term.matchExpressions ?? [];
    if (expressions.some((r) => r.key === regionLabel)) continue;
    const zones = expressions.filter((r) => r.key === zoneLabel).flatMap((r) => r.values ?? []);
    const region: NodeSelectorRequirement = {
      key: regionLabel,
      operator: "In",
      values: [regionParser(zones)],
    };
    term.matchExpressions = [...expressions, region];
  }
  const regions = topologyValues(pv, regionLabel);
  if (regions.length === 1) setLabelIfAbsent(pv, regionLabel, regions[0]!);
}

/**
 * CSI → in-tree, for rollback: csiKey becomes the zone label; with a regionParser each term
 * gains its region; the PV gets the zone label (all zones joined by `__`) when it lacks it.
 */
export function translateTopologyToInTree(
  pv: PersistentVolume,
  csiKey: string,
  regionParser?: RegionParser,
): void {
  const [zoneLabel] = topologyLabels(pv);
  replaceTopology(pv, csiKey, zoneLabel);
  if (regionParser !== undefined && terms(pv).length > 0) addRegionTopology(pv, regionParser);
  const zones = topologyValues(pv, zoneLabel);
  if (zones.length > 0) setLabelIfAbsent(pv, zoneLabel, zones.join(MULTI_ZONE_DELIMITER));
}

/** StorageClass allowedTopologies: zone keys (GA or beta) become csiKey; others pass through. */
export function translateAllowedTopologies(
  allowed: readonly TopologySelectorTerm[],
  csiKey: string,
): TopologySelectorTerm[] {
  return allowed.map((term) => {
    const out: TopologySelectorTerm = {};
    if (term.matchLabelExpressions !== undefined)
      out.matchLabelExpressions = term.matchLabelExpressions.map((e) =>
        e.key === LABEL_BETA_ZONE || e.key === LABEL_TOPOLOGY_ZONE ? { key: csiKey, values: e.values } : e,
      );
    return out;
  });
}

/** The one-term allowedTopologies a `zone`/`zones` StorageClass parameter turns into. */
export function topologySelector(key: string, values: string[]): TopologySelectorTerm[] {
  return [{ matchLabelExpressions: [{ key, values }] }];
}

/**
 * The zone/zones parameters of a zonal plugin's StorageClass become allowedTopologies on csiKey;
 * with allowedTopologies already set that is a conflict (as upstream), otherwise existing
 * allowedTopologies are rewritten. Returns the parameters left after zone/zones are removed.
 */
export function zonalStorageClassTopology(
  sc: {
    parameters?: Record<string, string>;
    allowedTopologies?: TopologySelectorTerm[];
    metadata?: { name?: string };
  },
  csiKey: string,
  keep: (key: string, value: string, params: Record<string, string>) => void,
): Record<string, string> {
  const params: Record<string, string> = {};
  let generated: TopologySelectorTerm[] | undefined;
  for (const [key, value] of Object.entries(sc.parameters ?? {})) {
    const lower = key.toLowerCase();
    if (lower === "zone") generated = topologySelector(csiKey, [value]);
    else if (lower === "zones") generated = topologySelector(csiKey, value.split(","));
    else keep(key, value, params);
  }
  const allowed = sc.allowedTopologies ?? [];
  if (generated !== undefined && allowed.length > 0)
    throw new TranslationError(
      `StorageClass ${JSON.stringify(sc.metadata?.name ?? "")}: cannot simultaneously set allowed topologies and zone/zones parameters`,
    );
  if (generated !== undefined) sc.allowedTopologies = generated;
  else if (allowed.length > 0) sc.allowedTopologies = translateAllowedTopologies(allowed, csiKey);
  return params;
}
