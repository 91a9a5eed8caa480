// Node selection rules shared by the scheduler's filters: pod nodeSelector, required node
// affinity (matchExpressions on labels, matchFields on metadata.name), a PV's nodeAffinity,
// a StorageClass's allowedTopologies, and taint tolerations — each with upstream's semantics
// (k8s.io/component-helpers/scheduling/corev1). Pure functions.

import type {
  Node,
  NodeSelector,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  Taint,
  Toleration,
  TopologySelectorTerm,
} from "../../api/index.ts";

type Labels = Readonly<Record<string, string>>;

/**
 * One requirement against a value (undefined = key absent). Malformed requirements (In with no
 * values, Gt with a non-integer) match nothing, as upstream's parse error drops the term.
 */
export function requirementMatches(requirement: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "In":
      return values.length > 0 && value !== undefined && values.includes(value);
    case "NotIn":
      return values.length > 0 && (value === undefined || !values.includes(value));
    case "Exists":
      return values.length === 0 && value !== undefined;
    case "DoesNotExist":
      return values.length === 0 && value === undefined;
    case "Gt":
    case "Lt": {
      if (values.length !== 1 || value === undefined) return false;
      const bound = values[0]!;
      if (!/^-?[0-9]+$/.test(bound) || !/^-?[0-9]+$/.test(value)) return false;
      const actual = BigInt(value);
      return requirement.operator === "Gt" ? actual > BigInt(bound) : actual < BigInt(bound);
    }
    default:
      return false;
  }
}

/** A term: all expressions (labels) and all fields (only metadata.name) hold; an empty term matches nothing. */
export function nodeSelectorTermMatches(term: NodeSelectorTerm, node: Node): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const labels: Labels = node.metadata?.labels ?? {};
  for (const expression of expressions) {
    const value = Object.hasOwn(labels, expression.key) ? labels[expression.key] : undefined;
    if (!requirementMatches(expression, value)) return false;
  }
  for (const field of fields) {
    // Upstream accepts only metadata.name with In/NotIn (one value) for matchFields.
    if (field.key !== "metadata.name" || (field.operator !== "In" && field.operator !== "NotIn"))
      return false;
    if (!requirementMatches(field, node.metadata?.name ?? "")) return false;
  }
  return true;
}

/** Terms are ORed; a selector without terms matches nothing. */
export function nodeSelectorMatches(selector: NodeSelector, node: Node): boolean {
  return (selector.nodeSelectorTerms ?? []).some((term) => nodeSelectorTermMatches(term, node));
}

/** The pod's required node affinity, if any (spec.affinity is loosely typed in the api layer). */
export function requiredNodeAffinity(pod: Pod): NodeSelector | undefined {
  const affinity = pod.spec?.affinity;
  const nodeAffinity = affinity?.nodeAffinity;
  if (typeof nodeAffinity !== "object" || nodeAffinity === null) return undefined;
  const required = (nodeAffinity as Record<string, unknown>).requiredDuringSchedulingIgnoredDuringExecution;
  if (typeof required !== "object" || required === null) return undefined;
  const terms = (required as Record<string, unknown>).nodeSelectorTerms;
  return { nodeSelectorTerms: Array.isArray(terms) ? (terms as NodeSelectorTerm[]) : [] };
}

/** nodeSelector (every pair) and required node affinity both hold (NodeAffinity Filter). */
export function podFitsNodeAffinity(pod: Pod, node: Node): boolean {
  const labels: Labels = node.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (!Object.hasOwn(labels, key) || labels[key] !== value) return false;
  }
  const required = requiredNodeAffinity(pod);
  return required === undefined || nodeSelectorMatches(required, node);
}

/** StorageClass allowedTopologies: an empty list allows all; an empty term allows nothing. */
export function topologyTermsMatch(
  terms: readonly TopologySelectorTerm[] | undefined,
  labels: Labels,
): boolean {
  if (!terms || terms.length === 0) return true;
  return terms.some((term) => {
    const expressions = term.matchLabelExpressions ?? [];
    if (expressions.length === 0) return false;
    return expressions.every(
      (expression) =>
        expression.values.length > 0 &&
        Object.hasOwn(labels, expression.key) &&
        expression.values.includes(labels[expression.key]!),
    );
  });
}

/** v1.Toleration.ToleratesTaint. */
export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? "Equal") {
    case "Equal":
      return (toleration.value ?? "") === (taint.value ?? "");
    case "Exists":
      return true;
    default:
      return false;
  }
}

/** The first NoSchedule/NoExecute taint no toleration covers (TaintToleration Filter). */
export function firstUntoleratedTaint(
  taints: readonly Taint[],
  tolerations: readonly Toleration[],
): Taint | undefined {
  return taints.find(
    (taint) =>
      (taint.effect === "NoSchedule" || taint.effect === "NoExecute") &&
      !tolerations.some((toleration) => toleratesTaint(toleration, taint)),
  );
}
