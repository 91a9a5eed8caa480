// A workload's LabelSelector against labels. Upstream treats a selector that does not parse as
// matching nothing (and the sync reports it); an empty selector matches nothing for these
// kinds (the API server refuses one on create).

import { labelSelectorMatches, type LabelSelector } from "../../api/index.ts";

export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (selector === undefined) return false;
  const empty =
    Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
  if (empty) return false;
  try {
    return labelSelectorMatches(selector, labels ?? {});
  } catch {
    return false;
  }
}
