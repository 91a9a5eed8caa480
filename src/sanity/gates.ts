// Gates and outcomes shared by the test model and the context: capability requirements and how
// they are checked, and the errors a test throws to end as skipped.

import { CsikitError } from "../base/index.ts";

export type ServiceName = "Identity" | "Controller" | "Node" | "GroupController";

/** Which capability list a requirement names: plugin (Identity), controller, node or group controller. */
export type CapabilityScope = "plugin" | "controller" | "node" | "group";

/**
 * A capability gate, `scope:NAME` (e.g. `controller:CREATE_DELETE_VOLUME`, `plugin:ONLINE`).
 * A leading `!` inverts it: the test runs only when the driver does NOT report the capability.
 * Scopes are explicit because some names (EXPAND_VOLUME, VOLUME_CONDITION, ...) exist both in
 * the controller and the node lists.
 */
export type Requirement = `${"" | "!"}${CapabilityScope}:${string}`;

/** The capabilities a driver reported, by scope, as upper-case enum names. */
export interface Capabilities {
  plugin: ReadonlySet<string>;
  controller: ReadonlySet<string>;
  node: ReadonlySet<string>;
  group: ReadonlySet<string>;
}

const SCOPE_WORDS: Record<CapabilityScope, string> = {
  plugin: "plugin",
  controller: "controller",
  node: "node",
  group: "group controller",
};

/** Why the test must be skipped for the driver's capabilities, or undefined when it may run. */
export function capabilityGate(requires: readonly Requirement[], caps: Capabilities): string | undefined {
  for (const requirement of requires) {
    const negated = requirement.startsWith("!");
    const body = negated ? requirement.slice(1) : requirement;
    const colon = body.indexOf(":");
    const scope = body.slice(0, colon);
    const name = body.slice(colon + 1);
    if (!isScope(scope))
      throw new CsikitError(
        "CSIKIT_ERR_SANITY_CATALOGUE",
        `sanity: bad capability requirement ${JSON.stringify(requirement)}`,
      );
    const has = caps[scope].has(name);
    if (!negated && !has) return `driver lacks ${SCOPE_WORDS[scope]} capability ${name}`;
    if (negated && has) return `driver has ${SCOPE_WORDS[scope]} capability ${name}`;
  }
  return undefined;
}

function isScope(value: string): value is CapabilityScope {
  return value === "plugin" || value === "controller" || value === "node" || value === "group";
}

/** Thrown inside a test to end it as skipped with `reason`. */
export class SkipTest extends CsikitError {
  constructor(reason: string) {
    super("CSIKIT_ERR_SANITY_SKIP", reason);
    this.name = "SkipTest";
  }
}

/** Thrown when the node service refused to mount: the test and later mounting tests skip. */
export class MountPrivilegeMissing extends SkipTest {
  constructor(reason: string) {
    super(reason);
    this.name = "MountPrivilegeMissing";
  }
}
