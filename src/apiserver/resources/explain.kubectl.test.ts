// `kubectl explain` against the embedded server for every served built-in kind and for a
// VolumeSnapshot CRD kind, plain and --recursive: kubectl's templates need a type on every
// schema (an empty `{}` fails with `expected schema argument to subtemplate 'typeguess'`), and
// descriptions come from upstream's (client-node's docs for built-ins, the CRD's schema).
// Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { attributesOf, builtinModelOf } from "./builtin-schema.ts";
import { builtinResourceDefs } from "./index.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import { CRDS_DIR } from "../../../test/harness/snapshots.ts";

interface SchemaNode {
  description?: string;
  properties?: Record<string, SchemaNode>;
}

const skip = kubectlMissing();

describe("kubectl explain", { skip }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.dispose();
  });

  test("every built-in kind, plain and --recursive, lists all its top-level fields", async () => {
    const defs = builtinResourceDefs().filter((def) => !def.resource.includes("/"));
    assert.ok(defs.length >= 15, `only ${defs.length} kinds`);
    for (const def of defs) {
      const model = builtinModelOf(def.group, def.version, def.kind);
      assert.ok(model !== undefined, `no model for ${def.kind}`);
      const fields = [...(attributesOf(model)?.keys() ?? [])];
      assert.ok(fields.includes("metadata"), `${def.kind} has no metadata field`);
      const target = def.resource;
      const apiVersion = def.group === "" ? def.version : `${def.group}/${def.version}`;
      for (const extra of [[], ["--recursive"]]) {
        const result = await kubectl(["explain", target, `--api-version=${apiVersion}`, ...extra], {
          kubeconfig: server.handle.kubeconfigPath,
        });
        const what = `kubectl explain ${target} ${extra.join(" ")}`;
        assert.equal(result.code, 0, `${what}: ${result.stderr}`);
        assert.match(result.stdout, new RegExp(`KIND:\\s+${def.kind}\\b`), what);
        for (const field of fields)
          assert.match(result.stdout, new RegExp(`^\\s+${field}\\t<`, "m"), `${what}: ${field}`);
        // --recursive descends into ObjectMeta.
        if (extra.length > 0) assert.match(result.stdout, /^\s+creationTimestamp\t<string>/m, what);
      }
    }
  });

  test("fields of MicroTime, fieldsV1 and IntOrString type, with upstream's descriptions", async () => {
    const lease = await kubectl(["explain", "lease.spec"], { kubeconfig: server.handle.kubeconfigPath });
    assert.equal(lease.code, 0, lease.stderr);
    assert.match(lease.stdout, /acquireTime\t<string>/);
    assert.match(lease.stdout, /holderIdentity contains the identity of the holder/);
    const event = await kubectl(["explain", "event"], { kubeconfig: server.handle.kubeconfigPath });
    assert.equal(event.code, 0, event.stderr);
    assert.match(event.stdout, /eventTime\t<string>/);
    assert.match(event.stdout, /Event is a report of an event somewhere in the cluster/);
    const managed = await kubectl(["explain", "pod.metadata.managedFields.fieldsV1"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(managed.code, 0, managed.stderr);
    assert.match(managed.stdout, /FIELD: fieldsV1 <Object>/);
    const port = await kubectl(["explain", "pod.spec.containers.livenessProbe.httpGet.port"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(port.code, 0, port.stderr);
    assert.match(port.stdout, /FIELD: port <string>/);
  });

  test("descriptions carry no stray escape backslashes", async () => {
    const result = await kubectl(["explain", "pod.spec.securityContext.appArmorProfile"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /pod or container's AppArmor settings/);
    assert.doesNotMatch(result.stdout, /\\/, "no backslash anywhere");
  });

  test("a VolumeSnapshot CRD kind keeps the descriptions of its schema", async () => {
    // Give two of the deploy/crds CRD's fields upstream's descriptions (csikit words its own).
    const path = join(CRDS_DIR, "snapshot.storage.k8s.io_volumesnapshots.yaml");
    const crd = parse(readFileSync(path, "utf8")) as {
      spec: { versions: { schema: { openAPIV3Schema: SchemaNode } }[] };
    };
    const root = crd.spec.versions[0]?.schema.openAPIV3Schema;
    const spec = root?.properties?.spec;
    assert.ok(root !== undefined && spec?.properties?.volumeSnapshotClassName !== undefined);
    root.description = "VolumeSnapshot is a user's request for either creating a point-in-time snapshot.";
    spec.properties.volumeSnapshotClassName.description =
      "volumeSnapshotClassName is the name of the VolumeSnapshotClass requested by the VolumeSnapshot.";
    const applied = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: stringify(crd),
    });
    assert.equal(applied.code, 0, applied.stderr);
    const waited = await kubectl(
      ["wait", "--for=condition=Established", "--timeout=60s", "crd/volumesnapshots.snapshot.storage.k8s.io"],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.equal(waited.code, 0, waited.stderr);
    const kind = await kubectl(["explain", "volumesnapshot"], { kubeconfig: server.handle.kubeconfigPath });
    assert.equal(kind.code, 0, kind.stderr);
    assert.match(kind.stdout, /VolumeSnapshot is a user's request/);
    for (const extra of [[], ["--recursive"]]) {
      const result = await kubectl(["explain", "volumesnapshot.spec", ...extra], {
        kubeconfig: server.handle.kubeconfigPath,
      });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^\s+source\t<Object> -required-/m);
      if (extra.length === 0)
        assert.match(result.stdout, /volumeSnapshotClassName is the name of the VolumeSnapshotClass/);
      else assert.match(result.stdout, /^\s+persistentVolumeClaimName\t<string>/m);
    }
  });
});
