// The flag scheme of `csikit sidecars`: shared flags by plain name, a sidecar's own namespaced,
// a shared flag overridable per sidecar, and each sidecar's own defaults kept.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Flags, parseFlags } from "../../base/index.ts";
import { ATTACHER_FLAGS } from "../attacher/index.ts";
import { PROVISIONER_FLAGS } from "../provisioner/index.ts";
import { SHARED_SIDECAR_FLAGS, componentFlags, namespacedFlags } from "./flags.ts";

const SPECS = {
  ...SHARED_SIDECAR_FLAGS,
  ...namespacedFlags({ provisioner: PROVISIONER_FLAGS, attacher: ATTACHER_FLAGS }, SHARED_SIDECAR_FLAGS),
};

test("shared flags reach every sidecar; namespaced ones only theirs; overrides win; own defaults kept", () => {
  const flags = new Flags(
    parseFlags(SPECS, [
      "--csi-address=/run/csi.sock",
      "--kubeconfig=/shared",
      "--provisioner.kubeconfig=/prov",
      "--attacher.worker-threads=3",
      "--provisioner.timeout=30s",
    ]),
  );
  const provisioner = componentFlags(flags, "provisioner", PROVISIONER_FLAGS);
  const attacher = componentFlags(flags, "attacher", ATTACHER_FLAGS);
  assert.equal(provisioner.string("csi-address"), "/run/csi.sock");
  assert.equal(attacher.string("csi-address"), "/run/csi.sock");
  assert.equal(provisioner.string("kubeconfig"), "/prov");
  assert.equal(attacher.string("kubeconfig"), "/shared");
  assert.equal(attacher.number("worker-threads"), 3);
  assert.equal(provisioner.number("timeout"), 30_000);
  // The attacher's own default timeout (15s), not the provisioner's.
  assert.equal(attacher.number("timeout"), 15_000);
  assert.ok(provisioner.isSet("kubeconfig") && !provisioner.isSet("worker-threads"));
});

test("the process-only flags are not namespaced; an unknown namespaced flag is refused", () => {
  assert.ok(!("provisioner.csi-address" in SPECS));
  assert.ok(!("attacher.http-endpoint" in SPECS));
  assert.throws(() => parseFlags(SPECS, ["--provisioner.no-such-flag=1"]), /provisioner\.no-such-flag/);
});
