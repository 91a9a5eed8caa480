// The API server as a Kubernetes release, through the machine's kubectl: at 1.37 (the default)
// it reports 1.37, serves storage.k8s.io/v1 VolumeAttributesClass, keeps the 1.33–1.37 CSIDriver
// fields with kube-apiserver's validation, carries VolumeAttachment error codes, lets
// allocatable.count change, checks the claim status fields of expansion recovery and modify;
// at 1.33 it reports 1.33, VolumeAttributesClass v1 is absent and the fields of gates that are
// off there are dropped. Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { kubeRelease } from "../api/index.ts";
import { startTestServer, type TestServer } from "../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../test/harness/kubectl.ts";

const skip = kubectlMissing();

type Json = Record<string, unknown>;

function run(server: TestServer, args: string[], stdin?: string) {
  return kubectl(args, {
    kubeconfig: server.handle.kubeconfigPath,
    ...(stdin !== undefined ? { stdin } : {}),
  });
}

async function getJson(server: TestServer, args: string[]): Promise<Json> {
  const got = await run(server, [...args, "-o", "json"]);
  assert.equal(got.code, 0, got.stderr);
  return JSON.parse(got.stdout) as Json;
}

async function apply(server: TestServer, object: Json) {
  return run(server, ["apply", "-f", "-"], JSON.stringify(object));
}

function csiDriver(name: string, spec: Json): Json {
  return { apiVersion: "storage.k8s.io/v1", kind: "CSIDriver", metadata: { name }, spec };
}

const ATTACHMENT: Json = {
  apiVersion: "storage.k8s.io/v1",
  kind: "VolumeAttachment",
  metadata: { name: "csi-attach-1" },
  spec: { attacher: "hostpath.csi.k8s.io", source: { persistentVolumeName: "pv-1" }, nodeName: "node-1" },
};

/** The status patch external-attacher v4.10+ writes after ControllerPublishVolume failed with ResourceExhausted. */
const EXHAUSTED = JSON.stringify({
  status: { attached: false, attachError: { message: "rpc error: code = ResourceExhausted", errorCode: 8 } },
});

describe("a 1.37 API server through kubectl", { skip }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.dispose());

  test("kubectl version reports 1.37", async () => {
    const version = await getJson(server, ["version"]);
    const serverVersion = version.serverVersion as Json;
    assert.equal(serverVersion.major, "1");
    assert.equal(serverVersion.minor, "37");
    assert.match(String(serverVersion.gitVersion), /^v1\.37\.\d+\+csikit$/);
  });

  test("VolumeAttributesClass at storage.k8s.io/v1 (preferred) and v1beta1", async () => {
    const resources = await run(server, ["api-resources", "--api-group=storage.k8s.io", "-o", "wide"]);
    assert.equal(resources.code, 0, resources.stderr);
    assert.match(
      resources.stdout,
      /^volumeattributesclasses\s+vac\s+storage\.k8s\.io\/v1\s+false\s+VolumeAttributesClass/m,
    );
    const raw = await run(server, ["get", "--raw", "/apis/storage.k8s.io"]);
    assert.equal(raw.code, 0, raw.stderr);
    const group = JSON.parse(raw.stdout) as Json;
    assert.equal((group.preferredVersion as Json).version, "v1");
    const versions = (group.versions as Json[]).map((v) => v.version);
    assert.deepEqual(versions.sort(), ["v1", "v1beta1"]);
    const created = await apply(server, {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttributesClass",
      metadata: { name: "gold" },
      driverName: "hostpath.csi.k8s.io",
      parameters: { iops: "3000" },
    });
    assert.equal(created.code, 0, created.stderr);
    const renamed = await run(server, [
      "patch",
      "vac",
      "gold",
      "--type=merge",
      "-p",
      '{"driverName":"other.csi.k8s.io"}',
    ]);
    assert.notEqual(renamed.code, 0);
    assert.match(renamed.stderr, /driverName: Forbidden: updates to driverName are forbidden/);
  });

  test("CSIDriver fields of 1.33–1.37: validation, defaults, mutability", async () => {
    const tooOften = await apply(
      server,
      csiDriver("fast.csi.k8s.io", { nodeAllocatableUpdatePeriodSeconds: 5 }),
    );
    assert.notEqual(tooOften.code, 0);
    assert.match(
      tooOften.stderr,
      /spec\.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds/,
    );
    const noTokens = await apply(
      server,
      csiDriver("tokens.csi.k8s.io", { serviceAccountTokenInSecrets: true }),
    );
    assert.notEqual(noTokens.code, 0);
    assert.match(noTokens.stderr, /spec\.serviceAccountTokenInSecrets: Invalid value: true/);

    const created = await apply(
      server,
      csiDriver("full.csi.k8s.io", {
        nodeAllocatableUpdatePeriodSeconds: 60,
        tokenRequests: [{ audience: "vault" }],
        serviceAccountTokenInSecrets: true,
        preventPodSchedulingIfMissing: true,
        seLinuxMount: true,
      }),
    );
    assert.equal(created.code, 0, created.stderr);
    const spec = (await getJson(server, ["get", "csidriver", "full.csi.k8s.io"])).spec as Json;
    assert.equal(spec.nodeAllocatableUpdatePeriodSeconds, 60);
    assert.equal(spec.serviceAccountTokenInSecrets, true);
    assert.equal(spec.preventPodSchedulingIfMissing, true);
    assert.equal(spec.seLinuxMount, true);
    assert.equal(spec.attachRequired, true, "defaulted");

    const slower = await run(server, [
      "patch",
      "csidriver",
      "full.csi.k8s.io",
      "--type=merge",
      "-p",
      '{"spec":{"nodeAllocatableUpdatePeriodSeconds":120,"preventPodSchedulingIfMissing":false}}',
    ]);
    assert.equal(slower.code, 0, slower.stderr);
    const attach = await run(server, [
      "patch",
      "csidriver",
      "full.csi.k8s.io",
      "--type=merge",
      "-p",
      '{"spec":{"attachRequired":false}}',
    ]);
    assert.notEqual(attach.code, 0);
    assert.match(attach.stderr, /spec\.attachedRequired: Invalid value: false: field is immutable/);
  });

  test("a VolumeAttachment error carries its gRPC code", async () => {
    const created = await apply(server, ATTACHMENT);
    assert.equal(created.code, 0, created.stderr);
    const patched = await run(server, [
      "patch",
      "volumeattachment",
      "csi-attach-1",
      "--subresource=status",
      "--type=merge",
      "-p",
      EXHAUSTED,
    ]);
    assert.equal(patched.code, 0, patched.stderr);
    const status = (await getJson(server, ["get", "volumeattachment", "csi-attach-1"])).status as Json;
    assert.equal((status.attachError as Json).errorCode, 8);
    const negative = await run(server, [
      "patch",
      "volumeattachment",
      "csi-attach-1",
      "--subresource=status",
      "--type=merge",
      "-p",
      '{"status":{"detachError":{"message":"x","errorCode":-1}}}',
    ]);
    assert.notEqual(negative.code, 0);
    assert.match(negative.stderr, /status\.detachError\.errorCode: Invalid value: -1/);
  });

  test("CSINode allocatable.count changes in place; the node ID does not", async () => {
    const node = {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSINode",
      metadata: { name: "node-1" },
      spec: { drivers: [{ name: "hostpath.csi.k8s.io", nodeID: "node-1", allocatable: { count: 10 } }] },
    };
    assert.equal((await apply(server, node)).code, 0);
    const lower = structuredClone(node);
    lower.spec.drivers[0]!.allocatable.count = 4;
    const recounted = await apply(server, lower);
    assert.equal(recounted.code, 0, recounted.stderr);
    const moved = structuredClone(lower);
    moved.spec.drivers[0]!.nodeID = "elsewhere";
    const refused = await apply(server, moved);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /spec\.drivers: Invalid value/);
  });

  test("PersistentVolume nodeAffinity stays immutable while MutablePVNodeAffinity is off", async () => {
    const created = await apply(server, persistentVolume("zone-a"));
    assert.equal(created.code, 0, created.stderr);
    const moved = await apply(server, persistentVolume("zone-b"));
    assert.notEqual(moved.code, 0);
    assert.match(moved.stderr, /nodeAffinity: Invalid value: .*field is immutable/);
  });

  test("claim status: allocatedResourceStatuses and modifyVolumeStatus are checked", async () => {
    const claim = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "data", namespace: "default" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    };
    assert.equal((await apply(server, claim)).code, 0);
    const patch = (status: Json) =>
      run(server, [
        "patch",
        "pvc",
        "data",
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status }),
      ]);
    const resizing = await patch({
      allocatedResources: { storage: "2Gi" },
      allocatedResourceStatuses: { storage: "ControllerResizeInProgress" },
      currentVolumeAttributesClassName: "gold",
      modifyVolumeStatus: { status: "InProgress", targetVolumeAttributesClassName: "silver" },
    });
    assert.equal(resizing.code, 0, resizing.stderr);
    const status = (await getJson(server, ["get", "pvc", "data", "-n", "default"])).status as Json;
    // GA fields (RecoverVolumeExpansionFailure, VolumeAttributesClass): all kept at 1.37.
    assert.deepEqual(status.allocatedResourceStatuses, { storage: "ControllerResizeInProgress" });
    assert.deepEqual(status.allocatedResources, { storage: "2Gi" });
    assert.equal(status.currentVolumeAttributesClassName, "gold");
    assert.equal((status.modifyVolumeStatus as Json).status, "InProgress");
    const bogus = await patch({ allocatedResourceStatuses: { storage: "Shrinking" } });
    assert.notEqual(bogus.code, 0);
    assert.match(bogus.stderr, /status\.allocatedResourceStatus: Unsupported value: "Shrinking"/);
    const cpu = await patch({ allocatedResources: { cpu: "1" } });
    assert.notEqual(cpu.code, 0);
    assert.match(cpu.stderr, /status\.allocatedResources: Unsupported value: "cpu"/);
    const unknown = await patch({ modifyVolumeStatus: { status: "Done" } });
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /status\.modifyVolumeStatus\.status: Unsupported value: "Done"/);
  });
});

function persistentVolume(zone: string): Json {
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: "pv-zoned" },
    spec: {
      capacity: { storage: "1Gi" },
      accessModes: ["ReadWriteOnce"],
      csi: { driver: "hostpath.csi.k8s.io", volumeHandle: "vol-1" },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "topology.kubernetes.io/zone", operator: "In", values: [zone] }] },
          ],
        },
      },
    },
  };
}

describe("a 1.37 API server with MutablePVNodeAffinity on", { skip }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ release: kubeRelease("1.37", { MutablePVNodeAffinity: "true" }) });
  });
  after(() => server.dispose());

  test("a PersistentVolume's nodeAffinity may change, and is still validated", async () => {
    assert.equal((await apply(server, persistentVolume("zone-a"))).code, 0);
    const moved = await apply(server, persistentVolume("zone-b"));
    assert.equal(moved.code, 0, moved.stderr);
    const pv = await getJson(server, ["get", "pv", "pv-zoned"]);
    assert.match(JSON.stringify(pv.spec), /zone-b/);
    const broken = persistentVolume("zone-c");
    (broken.spec as Json).nodeAffinity = { required: { nodeSelectorTerms: [] } };
    const refused = await apply(server, broken);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /spec\.nodeAffinity\.required/);
  });
});

describe("a 1.33 API server through kubectl", { skip }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ release: kubeRelease("1.33") });
  });
  after(() => server.dispose());

  test("kubectl version reports 1.33", async () => {
    const serverVersion = (await getJson(server, ["version"])).serverVersion as Json;
    assert.equal(serverVersion.minor, "33");
    assert.match(String(serverVersion.gitVersion), /^v1\.33\.\d+\+csikit$/);
  });

  test("no VolumeAttributesClass: v1 came in 1.34 and the beta is off by default", async () => {
    const resources = await run(server, ["api-resources", "--api-group=storage.k8s.io"]);
    assert.equal(resources.code, 0, resources.stderr);
    assert.doesNotMatch(resources.stdout, /volumeattributesclasses/);
    assert.match(resources.stdout, /^csidrivers\s/m);
    const listed = await run(server, ["get", "--raw", "/apis/storage.k8s.io/v1/volumeattributesclasses"]);
    assert.notEqual(listed.code, 0);
    assert.match(listed.stderr, /NotFound|not found/i);
  });

  test("fields of gates that 1.33 has off are dropped on write", async () => {
    const created = await apply(
      server,
      csiDriver("full.csi.k8s.io", {
        nodeAllocatableUpdatePeriodSeconds: 60,
        tokenRequests: [{ audience: "vault" }],
        serviceAccountTokenInSecrets: true,
        preventPodSchedulingIfMissing: true,
      }),
    );
    assert.equal(created.code, 0, created.stderr);
    const spec = (await getJson(server, ["get", "csidriver", "full.csi.k8s.io"])).spec as Json;
    assert.equal(
      spec.nodeAllocatableUpdatePeriodSeconds,
      undefined,
      "MutableCSINodeAllocatableCount is alpha in 1.33",
    );
    assert.equal(spec.serviceAccountTokenInSecrets, undefined, "CSIServiceAccountTokenSecrets came in 1.35");
    assert.equal(spec.preventPodSchedulingIfMissing, undefined, "VolumeLimitScaling came in 1.35");
    assert.deepEqual(spec.tokenRequests, [{ audience: "vault" }]);

    assert.equal((await apply(server, ATTACHMENT)).code, 0);
    const patched = await run(server, [
      "patch",
      "volumeattachment",
      "csi-attach-1",
      "--subresource=status",
      "--type=merge",
      "-p",
      EXHAUSTED,
    ]);
    assert.equal(patched.code, 0, patched.stderr);
    const error = ((await getJson(server, ["get", "volumeattachment", "csi-attach-1"])).status as Json)
      .attachError as Json;
    assert.equal(error.message, "rpc error: code = ResourceExhausted");
    assert.equal(error.errorCode, undefined);
  });
  test("claim status: modify fields dropped (VolumeAttributesClass beta off), resize statuses kept (beta on)", async () => {
    const claim = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "data", namespace: "default" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    };
    assert.equal((await apply(server, claim)).code, 0);
    const patched = await run(server, [
      "patch",
      "pvc",
      "data",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({
        status: {
          allocatedResources: { storage: "2Gi" },
          allocatedResourceStatuses: { storage: "ControllerResizeInProgress" },
          currentVolumeAttributesClassName: "gold",
          modifyVolumeStatus: { status: "InProgress", targetVolumeAttributesClassName: "silver" },
        },
      }),
    ]);
    assert.equal(patched.code, 0, patched.stderr);
    const status = (await getJson(server, ["get", "pvc", "data", "-n", "default"])).status as Json;
    assert.deepEqual(status.allocatedResourceStatuses, { storage: "ControllerResizeInProgress" });
    assert.deepEqual(status.allocatedResources, { storage: "2Gi" });
    assert.equal(status.currentVolumeAttributesClassName, undefined);
    assert.equal(status.modifyVolumeStatus, undefined);
  });
});
