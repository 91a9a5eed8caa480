// Every x-kubernetes-validations rule of deploy/crds enforced by the embedded server as
// kube-apiserver enforces it, through the machine's kubectl: each case applies an optional
// first object, then a second (create or update), and expects kube-apiserver's exact error
// line with upstream's message — or success, where upstream allows the change (the cases follow
// upstream's client/hack/cel-tests). Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import { CRDS_DIR } from "../../../test/harness/snapshots.ts";

const skip = kubectlMissing();

interface Case {
  name: string;
  /** Applied first (must succeed). */
  pre?: string;
  /** Applied second (create or update). */
  post?: string;
  /** Status merge patches through the status subresource: first (must succeed), then second. */
  status?: { kind: string; name: string; namespace?: string; pre: string; post: string };
  /** kube-apiserver's error lines (after the "is invalid:" head), or undefined for success. */
  error?: string;
}

const vs = (name: string, source: string, extra = "") => `apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: ${name}, namespace: default}
spec:
  source: ${source}
${extra}`;

const vsc = (name: string, spec: string) => `apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata: {name: ${name}}
spec:
  driver: hostpath.csi.k8s.io
  deletionPolicy: Delete
${spec}`;

const vgs = (
  version: string,
  name: string,
  spec: string,
) => `apiVersion: groupsnapshot.storage.k8s.io/${version}
kind: VolumeGroupSnapshot
metadata: {name: ${name}, namespace: default}
spec:
${spec}`;

const vgsclass = (
  version: string,
  name: string,
  body: string,
) => `apiVersion: groupsnapshot.storage.k8s.io/${version}
kind: VolumeGroupSnapshotClass
metadata: {name: ${name}}
${body}`;

const vgsc = (
  version: string,
  name: string,
  spec: string,
) => `apiVersion: groupsnapshot.storage.k8s.io/${version}
kind: VolumeGroupSnapshotContent
metadata: {name: ${name}}
spec:
${spec}`;

const REF = "  volumeSnapshotRef: {name: snap, namespace: default}";
const GREF = "  volumeGroupSnapshotRef: {name: group, namespace: default}";

const CASES: Case[] = [
  // ---- VolumeSnapshot
  {
    name: "VolumeSnapshot with both sources",
    post: vs("vs-both", "{persistentVolumeClaimName: a, volumeSnapshotContentName: b}"),
    error: `The VolumeSnapshot "vs-both" is invalid: spec.source: Invalid value: "object": exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set`,
  },
  {
    name: "VolumeSnapshot with no source",
    post: vs("vs-none", "{}"),
    error: `The VolumeSnapshot "vs-none" is invalid: spec.source: Invalid value: "object": exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set`,
  },
  {
    name: "VolumeSnapshot with an empty class name",
    post: vs("vs-empty-class", "{persistentVolumeClaimName: a}", '  volumeSnapshotClassName: ""\n'),
    error: `The VolumeSnapshot "vs-empty-class" is invalid: spec.volumeSnapshotClassName: Invalid value: "string": volumeSnapshotClassName must not be the empty string when set`,
  },
  {
    name: "VolumeSnapshot claim changed",
    pre: vs("vs-pvc", "{persistentVolumeClaimName: a}"),
    post: vs("vs-pvc", "{persistentVolumeClaimName: b}"),
    error: `The VolumeSnapshot "vs-pvc" is invalid: spec.source.persistentVolumeClaimName: Invalid value: "string": persistentVolumeClaimName is immutable`,
  },
  {
    name: "VolumeSnapshot claim source swapped for a content source",
    pre: vs("vs-swap", "{persistentVolumeClaimName: a}"),
    post: vs("vs-swap", "{volumeSnapshotContentName: c}"),
    error: `The VolumeSnapshot "vs-swap" is invalid: spec.source: Invalid value: "object": persistentVolumeClaimName is required once set`,
  },
  {
    name: "VolumeSnapshot content name changed",
    pre: vs("vs-vsc", "{volumeSnapshotContentName: c}"),
    post: vs("vs-vsc", "{volumeSnapshotContentName: d}"),
    error: `The VolumeSnapshot "vs-vsc" is invalid: spec.source.volumeSnapshotContentName: Invalid value: "string": volumeSnapshotContentName is immutable`,
  },
  {
    name: "VolumeSnapshot annotated (the source unchanged)",
    pre: vs("vs-annotate", "{persistentVolumeClaimName: a}"),
    post: vs("vs-annotate", "{persistentVolumeClaimName: a}").replace(
      "namespace: default}",
      "namespace: default, annotations: {note: changed}}",
    ),
  },
  // ---- VolumeSnapshotContent
  {
    name: "VolumeSnapshotContent with both handles",
    post: vsc("vsc-both", `${REF}\n  source: {volumeHandle: v, snapshotHandle: s}\n`),
    error: `The VolumeSnapshotContent "vsc-both" is invalid: spec.source: Invalid value: "object": exactly one of volumeHandle and snapshotHandle must be set`,
  },
  {
    name: "VolumeSnapshotContent reference without a namespace",
    post: vsc("vsc-no-ns", "  volumeSnapshotRef: {name: snap}\n  source: {snapshotHandle: s}\n"),
    error: `The VolumeSnapshotContent "vsc-no-ns" is invalid: spec.volumeSnapshotRef: Invalid value: "object": both spec.volumeSnapshotRef.name and spec.volumeSnapshotRef.namespace must be set`,
  },
  {
    name: "VolumeSnapshotContent snapshot handle changed",
    pre: vsc("vsc-handle", `${REF}\n  source: {snapshotHandle: s}\n`),
    post: vsc("vsc-handle", `${REF}\n  source: {snapshotHandle: t}\n`),
    error: `The VolumeSnapshotContent "vsc-handle" is invalid: spec.source.snapshotHandle: Invalid value: "string": snapshotHandle is immutable`,
  },
  {
    name: "VolumeSnapshotContent volume handle swapped for a snapshot handle",
    pre: vsc("vsc-swap", `${REF}\n  source: {volumeHandle: v}\n`),
    post: vsc("vsc-swap", `${REF}\n  source: {snapshotHandle: s}\n`),
    error: `The VolumeSnapshotContent "vsc-swap" is invalid: spec.source: Invalid value: "object": volumeHandle is required once set`,
  },
  {
    name: "VolumeSnapshotContent source volume mode removed",
    pre: vsc("vsc-mode", `${REF}\n  source: {volumeHandle: v}\n  sourceVolumeMode: Filesystem\n`),
    post: vsc("vsc-mode", `${REF}\n  source: {volumeHandle: v}\n`),
    error: `The VolumeSnapshotContent "vsc-mode" is invalid: spec: Invalid value: "object": sourceVolumeMode is required once set`,
  },
  {
    name: "VolumeSnapshotContent source volume mode changed",
    pre: vsc("vsc-mode2", `${REF}\n  source: {volumeHandle: v}\n  sourceVolumeMode: Filesystem\n`),
    post: vsc("vsc-mode2", `${REF}\n  source: {volumeHandle: v}\n  sourceVolumeMode: Block\n`),
    error: `The VolumeSnapshotContent "vsc-mode2" is invalid: spec.sourceVolumeMode: Invalid value: "string": sourceVolumeMode is immutable`,
  },
  // ---- VolumeGroupSnapshot (v1; v1beta2 and v1beta1 carry the same rules)
  {
    name: "VolumeGroupSnapshot with a selector and a content",
    post: vgs(
      "v1",
      "vgs-both",
      "  source:\n    selector: {matchLabels: {app: a}}\n    volumeGroupSnapshotContentName: c\n",
    ),
    error: `The VolumeGroupSnapshot "vgs-both" is invalid: spec.source: Invalid value: "object": exactly one of selector and volumeGroupSnapshotContentName must be set`,
  },
  {
    name: "VolumeGroupSnapshot (v1beta1) with neither",
    post: vgs("v1beta1", "vgs-none", "  source: {}\n"),
    error: `The VolumeGroupSnapshot "vgs-none" is invalid: spec.source: Invalid value: "object": exactly one of selector and volumeGroupSnapshotContentName must be set`,
  },
  {
    name: "VolumeGroupSnapshot with an empty class name",
    post: vgs(
      "v1beta2",
      "vgs-class",
      '  volumeGroupSnapshotClassName: ""\n  source: {volumeGroupSnapshotContentName: c}\n',
    ),
    error: `The VolumeGroupSnapshot "vgs-class" is invalid: spec.volumeGroupSnapshotClassName: Invalid value: "string": volumeGroupSnapshotClassName must not be the empty string when set`,
  },
  {
    name: "VolumeGroupSnapshot selector changed",
    pre: vgs("v1", "vgs-sel", "  source: {selector: {matchLabels: {app: a}}}\n"),
    post: vgs("v1", "vgs-sel", "  source: {selector: {matchLabels: {app: b}}}\n"),
    error: `The VolumeGroupSnapshot "vgs-sel" is invalid: spec.source.selector: Invalid value: "object": selector is immutable`,
  },
  {
    name: "VolumeGroupSnapshot selector swapped for a content",
    pre: vgs("v1", "vgs-swap", "  source: {selector: {matchLabels: {app: a}}}\n"),
    post: vgs("v1", "vgs-swap", "  source: {volumeGroupSnapshotContentName: c}\n"),
    error: `The VolumeGroupSnapshot "vgs-swap" is invalid: spec.source: Invalid value: "object": selector is required once set`,
  },
  {
    name: "VolumeGroupSnapshot content name changed",
    pre: vgs("v1", "vgs-content", "  source: {volumeGroupSnapshotContentName: c}\n"),
    post: vgs("v1", "vgs-content", "  source: {volumeGroupSnapshotContentName: d}\n"),
    error: `The VolumeGroupSnapshot "vgs-content" is invalid: spec.source.volumeGroupSnapshotContentName: Invalid value: "string": volumeGroupSnapshotContentName is immutable`,
  },
  {
    name: "VolumeGroupSnapshot bound content name changed (status)",
    pre: vgs("v1", "vgs-bound", "  source: {volumeGroupSnapshotContentName: c}\n"),
    status: {
      kind: "vgs",
      name: "vgs-bound",
      namespace: "default",
      pre: '{"status":{"boundVolumeGroupSnapshotContentName":"c"}}',
      post: '{"status":{"boundVolumeGroupSnapshotContentName":"d"}}',
    },
    error: `The VolumeGroupSnapshot "vgs-bound" is invalid: status.boundVolumeGroupSnapshotContentName: Invalid value: "string": boundVolumeGroupSnapshotContentName is immutable once set`,
  },
  // ---- VolumeGroupSnapshotClass
  {
    name: "VolumeGroupSnapshotClass parameters changed",
    pre: vgsclass("v1", "vgsclass-params", "driver: d\ndeletionPolicy: Delete\nparameters: {a: b}\n"),
    post: vgsclass("v1", "vgsclass-params", "driver: d\ndeletionPolicy: Delete\nparameters: {a: c}\n"),
    error: `The VolumeGroupSnapshotClass "vgsclass-params" is invalid: parameters: Invalid value: "object": parameters are immutable once set`,
  },
  {
    name: "VolumeGroupSnapshotClass deletion policy and driver changed",
    pre: vgsclass("v1beta2", "vgsclass-policy", "driver: d\ndeletionPolicy: Delete\n"),
    post: vgsclass("v1beta2", "vgsclass-policy", "driver: e\ndeletionPolicy: Retain\n"),
    error: `The VolumeGroupSnapshotClass "vgsclass-policy" is invalid: \n* deletionPolicy: Invalid value: "string": deletionPolicy is immutable once set\n* driver: Invalid value: "string": driver is immutable once set`,
  },
  {
    name: "VolumeGroupSnapshotClass (v1beta1) parameters changed: v1beta1 has no such rule",
    pre: vgsclass("v1beta1", "vgsclass-beta1", "driver: d\ndeletionPolicy: Delete\nparameters: {a: b}\n"),
    post: vgsclass("v1beta1", "vgsclass-beta1", "driver: d\ndeletionPolicy: Delete\nparameters: {a: c}\n"),
  },
  // ---- VolumeGroupSnapshotContent
  {
    name: "VolumeGroupSnapshotContent reference with only a name",
    post: vgsc(
      "v1",
      "vgsc-ref",
      "  volumeGroupSnapshotRef: {name: group}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a]}\n",
    ),
    error: `The VolumeGroupSnapshotContent "vgsc-ref" is invalid: spec.volumeGroupSnapshotRef: Invalid value: "object": both volumeGroupSnapshotRef.name and volumeGroupSnapshotRef.namespace must be set`,
  },
  {
    name: "VolumeGroupSnapshotContent with volume handles and group snapshot handles",
    post: vgsc(
      "v1",
      "vgsc-both",
      `${GREF}\n  driver: d\n  deletionPolicy: Delete\n  source:\n    volumeHandles: [a]\n    groupSnapshotHandles: {volumeGroupSnapshotHandle: g, volumeSnapshotHandles: [s]}\n`,
    ),
    error: `The VolumeGroupSnapshotContent "vgsc-both" is invalid: spec.source: Invalid value: "object": exactly one of volumeHandles and groupSnapshotHandles must be set`,
  },
  {
    name: "VolumeGroupSnapshotContent volume handles changed",
    pre: vgsc(
      "v1",
      "vgsc-handles",
      `${GREF}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a]}\n`,
    ),
    post: vgsc(
      "v1",
      "vgsc-handles",
      `${GREF}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a, b]}\n`,
    ),
    error: `The VolumeGroupSnapshotContent "vgsc-handles" is invalid: spec.source.volumeHandles: Invalid value: "array": volumeHandles is immutable`,
  },
  {
    name: "VolumeGroupSnapshotContent reference name changed",
    pre: vgsc(
      "v1",
      "vgsc-rename",
      `${GREF}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a]}\n`,
    ),
    post: vgsc(
      "v1",
      "vgsc-rename",
      "  volumeGroupSnapshotRef: {name: other, namespace: default}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a]}\n",
    ),
    error: `The VolumeGroupSnapshotContent "vgsc-rename" is invalid: spec.volumeGroupSnapshotRef: Invalid value: "object": volumeGroupSnapshotRef.name and volumeGroupSnapshotRef.namespace are immutable`,
  },
  {
    name: "VolumeGroupSnapshotContent uid set from empty, deletion policy changed: allowed",
    pre: vgsc(
      "v1",
      "vgsc-uid",
      `${GREF}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a]}\n`,
    ),
    post: vgsc(
      "v1",
      "vgsc-uid",
      "  volumeGroupSnapshotRef: {name: group, namespace: default, uid: 9f1c7a34-1111-4e1a-9c1e-000000000001}\n  driver: d\n  deletionPolicy: Retain\n  source: {volumeHandles: [a]}\n",
    ),
  },
  {
    name: "VolumeGroupSnapshotContent uid changed once set",
    pre: vgsc(
      "v1",
      "vgsc-uid2",
      "  volumeGroupSnapshotRef: {name: group, namespace: default, uid: 9f1c7a34-1111-4e1a-9c1e-000000000001}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a]}\n",
    ),
    post: vgsc(
      "v1",
      "vgsc-uid2",
      "  volumeGroupSnapshotRef: {name: group, namespace: default, uid: 9f1c7a34-1111-4e1a-9c1e-000000000002}\n  driver: d\n  deletionPolicy: Delete\n  source: {volumeHandles: [a]}\n",
    ),
    error: `The VolumeGroupSnapshotContent "vgsc-uid2" is invalid: spec.volumeGroupSnapshotRef: Invalid value: "object": volumeGroupSnapshotRef.uid is immutable once set`,
  },
  {
    name: "VolumeGroupSnapshotContent driver and class changed",
    pre: vgsc(
      "v1beta2",
      "vgsc-driver",
      `${GREF}\n  driver: d\n  deletionPolicy: Delete\n  volumeGroupSnapshotClassName: a\n  source: {volumeHandles: [a]}\n`,
    ),
    post: vgsc(
      "v1beta2",
      "vgsc-driver",
      `${GREF}\n  driver: e\n  deletionPolicy: Delete\n  volumeGroupSnapshotClassName: b\n  source: {volumeHandles: [a]}\n`,
    ),
    error: `The VolumeGroupSnapshotContent "vgsc-driver" is invalid: \n* spec.driver: Invalid value: "string": driver is immutable once set\n* spec.volumeGroupSnapshotClassName: Invalid value: "string": volumeGroupSnapshotClassName is immutable once set`,
  },
  // ---- SnapshotMetadataService (no CEL rules: the schema's required fields)
  {
    name: "SnapshotMetadataService without an audience",
    post: `apiVersion: cbt.storage.k8s.io/v1beta1
kind: SnapshotMetadataService
metadata: {name: hostpath.csi.k8s.io}
spec: {address: "snapshot-metadata.default:6443", caCert: Y2E=}
`,
    error: `The SnapshotMetadataService "hostpath.csi.k8s.io" is invalid: spec.audience: Required value`,
  },
];

describe("snapshot CRD validation rules through kubectl", { skip }, () => {
  let server: TestServer;
  const run = (args: string[], stdin?: string) =>
    kubectl(args, { kubeconfig: server.handle.kubeconfigPath, stdin });

  before(async () => {
    server = await startTestServer();
    const applied = await run(["apply", "-f", CRDS_DIR]);
    assert.equal(applied.code, 0, applied.stderr);
    const waited = await run(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    assert.equal(waited.code, 0, waited.stderr);
  });
  after(async () => {
    await server.dispose();
  });

  for (const c of CASES) {
    test(c.name, async () => {
      if (c.pre !== undefined) {
        const pre = await run(["apply", "-f", "-"], c.pre);
        assert.equal(pre.code, 0, pre.stderr);
      }
      let post;
      if (c.status !== undefined) {
        const { kind, name, namespace } = c.status;
        const target = [kind, name, ...(namespace !== undefined ? ["-n", namespace] : [])];
        const patch = (body: string) =>
          run(["patch", ...target, "--subresource=status", "--type=merge", "-p", body]);
        const first = await patch(c.status.pre);
        assert.equal(first.code, 0, first.stderr);
        post = await patch(c.status.post);
      } else {
        post = await run(["apply", "-f", "-"], c.post);
      }
      if (c.error === undefined) {
        assert.equal(post.code, 0, post.stderr);
        return;
      }
      assert.notEqual(post.code, 0, post.stdout);
      assert.equal(post.stderr.trim(), c.error);
    });
  }
});
