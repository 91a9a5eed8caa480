// The 1.32 migration gates and the per-node decision table (the seed's "Detection of migration
// status for a plugin"): gate parsing errors, defaults, the CSINode annotation's value, and
// whether a controller treats a plugin's volume on a node as migrated.

import { test } from "node:test";
import assert from "node:assert/strict";
import type { CSINode } from "../api/index.ts";
import {
  MIGRATED_PLUGINS_ANNOTATION,
  featureGatesHelp,
  isMigratedOnNode,
  isMigrationCompleteForPlugin,
  isMigrationEnabledForPlugin,
  migratedPlugins,
  resolveFeatureGates,
} from "./index.ts";

const PX = "kubernetes.io/portworx-volume";
const GCE = "kubernetes.io/gce-pd";

test("gates resolve with 1.32 defaults; removed, unknown and bad gates are named errors", () => {
  assert.deepEqual(resolveFeatureGates({}), {
    CSIMigrationPortworx: true,
    InTreePluginPortworxUnregister: false,
  });
  assert.deepEqual(resolveFeatureGates({ CSIMigrationPortworx: false }), {
    CSIMigrationPortworx: false,
    InTreePluginPortworxUnregister: false,
  });
  assert.throws(
    () => resolveFeatureGates({ CSIMigrationGCE: false }),
    /unrecognized feature gate: CSIMigrationGCE \(GA and removed upstream: GCE PD migration is always on\)/,
  );
  assert.throws(
    () => resolveFeatureGates({ CSIMigration: true }),
    /unrecognized feature gate: CSIMigration \(GA and removed/,
  );
  assert.throws(
    () => resolveFeatureGates({ InTreePluginRBDUnregister: true }),
    /removed upstream with the in-tree RBD plugin/,
  );
  assert.throws(
    () => resolveFeatureGates({ NoSuchGate: true }),
    /^TranslationError: unrecognized feature gate: NoSuchGate$|unrecognized feature gate: NoSuchGate/,
  );
  assert.throws(
    () => resolveFeatureGates({ Locked: false }, { Locked: { default: true, stage: "GA", locked: true } }),
    /cannot set feature gate Locked to false, feature is locked to true/,
  );
  assert.equal(
    featureGatesHelp(),
    "CSIMigrationPortworx=true|false (BETA - default=true), InTreePluginPortworxUnregister=true|false (ALPHA - default=false)",
  );
});

test("migration is always on for the six plugins without gates; Portworx follows its gates", () => {
  const defaults = resolveFeatureGates({});
  const off = resolveFeatureGates({ CSIMigrationPortworx: false });
  const complete = resolveFeatureGates({ InTreePluginPortworxUnregister: true });
  assert.deepEqual(migratedPlugins(defaults), [
    "kubernetes.io/aws-ebs",
    "kubernetes.io/azure-disk",
    "kubernetes.io/azure-file",
    "kubernetes.io/cinder",
    "kubernetes.io/gce-pd",
    PX,
    "kubernetes.io/vsphere-volume",
  ]);
  assert.ok(!migratedPlugins(off).includes(PX));
  assert.ok(isMigrationEnabledForPlugin(off, GCE) && isMigrationCompleteForPlugin(off, GCE));
  assert.ok(isMigrationEnabledForPlugin(defaults, PX) && !isMigrationCompleteForPlugin(defaults, PX));
  assert.ok(isMigrationCompleteForPlugin(complete, PX));
  assert.ok(
    !isMigrationCompleteForPlugin(
      resolveFeatureGates({ CSIMigrationPortworx: false, InTreePluginPortworxUnregister: true }),
      PX,
    ),
  );
  assert.ok(!isMigrationEnabledForPlugin(defaults, "kubernetes.io/nfs"));
});

test("per-node decision: controller gates × node annotation", () => {
  const node = (plugins?: string): CSINode => ({
    metadata: {
      name: "n",
      ...(plugins !== undefined && { annotations: { [MIGRATED_PLUGINS_ANNOTATION]: plugins } }),
    },
    spec: { drivers: [] },
  });
  const on = resolveFeatureGates({});
  const off = resolveFeatureGates({ CSIMigrationPortworx: false });
  const complete = resolveFeatureGates({ InTreePluginPortworxUnregister: true });
  const rows: [string, ReturnType<typeof resolveFeatureGates>, CSINode | undefined, boolean][] = [
    ["controller on, node migrated", on, node(`${GCE},${PX}`), true],
    ["controller on, node not migrated (old kubelet or gate off)", on, node(GCE), false],
    ["controller on, no annotation", on, node(), false],
    ["controller on, no CSINode yet", on, undefined, false],
    ["controller off, node migrated: unsupported skew, stays in-tree", off, node(PX), false],
    ["migration complete: node not asked", complete, undefined, true],
  ];
  for (const [name, gates, csiNode, want] of rows)
    assert.equal(isMigratedOnNode(gates, PX, csiNode), want, name);
  // GCE PD's in-tree code is gone: it is migrated on every node.
  assert.ok(isMigratedOnNode(off, GCE, undefined));
});
