// The snapshot-metadata service as `csikit up` runs it: the real API server (RBAC of deploy/rbac/,
// the CRDs of deploy/crds), `csikit hostpath --enable-snapshot-metadata` on a Unix socket, and
// `csikit snapshot-metadata` as its own process under its ServiceAccount, serving TLS on a
// loopback port with a certificate the SnapshotMetadataService object advertises. Callers send
// real ServiceAccount tokens the API server issued for an audience (TokenRequest):
// - allowed (the lister's account, bound to csi-snapshot-metadata-client): the allocated blocks
//   of a block snapshot and the blocks changed since a base (by its CSI id) are exactly the ones
//   written to the volume, in order, over several messages;
// - a token for another audience: UNAUTHENTICATED; an account without the RBAC: PERMISSION_DENIED;
//   an empty field: INVALID_ARGUMENT naming it; a missing snapshot NOT_FOUND, one not ready
//   UNAVAILABLE, another driver's INVALID_ARGUMENT;
// - `csikit snapshot-metadata list` prints the same ranges in upstream's table and JSON;
// - the metrics count the calls by outcome, /health answers ok; neither the sidecar nor the
//   lister is refused anything by RBAC (the audit log has no 403 for them).
// Volumes are 64 KiB files; nothing needs root.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";
import { GVR } from "../../src/api/index.ts";
import { freePort } from "../../src/cluster/ports.ts";
import {
  CsiClient,
  GrpcStatus,
  SnapshotMetadataApiClient,
  grpcCode,
  type SnapshotMetadataApi,
} from "../../src/csi/index.ts";
import { selfSignedServingCert, type KubeClient, type KubeObject } from "../../src/kube/index.ts";
import { defer } from "../harness/cleanup.ts";
import { scrape } from "../harness/https-get.ts";
import { forbidden, describeEvent, spawnComponent, startRbacCluster } from "../harness/rbac.ts";
import { installSnapshotCrds, writeReadySnapshot } from "../harness/snapshots.ts";
import { until } from "../harness/until.ts";

const DRIVER = "hostpath.csi.k8s.io";
const AUDIENCE = "snapshot-metadata.hostpath.csi.k8s.io";
const KIB = 1024;
const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const run = promisify(execFile);

async function writeBlock(file: string, offset: number, byte: number): Promise<void> {
  const handle = await open(file, "r+");
  try {
    await handle.write(Buffer.alloc(4 * KIB, byte), 0, 4 * KIB, offset);
  } finally {
    await handle.close();
  }
}

async function tokenFor(admin: KubeClient, account: string, audience: string): Promise<string> {
  const response = await admin.request<{ status: { token: string } }>({
    method: "POST",
    path: `/api/v1/namespaces/default/serviceaccounts/${account}/token`,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: [audience] } },
  });
  return response.status.token;
}

type Message = SnapshotMetadataApi.GetMetadataAllocatedResponse;

async function collect(stream: AsyncIterable<Message>): Promise<Message[]> {
  const out: Message[] = [];
  for await (const message of stream) out.push(message);
  return out;
}

const ranges = (messages: readonly Message[]): [number, number][] =>
  messages.flatMap((m) =>
    m.blockMetadata.map((b): [number, number] => [Number(b.byteOffset), Number(b.sizeBytes)]),
  );

async function rejectsWithCode(stream: AsyncIterable<Message>, code: number, pattern: RegExp): Promise<void> {
  await assert.rejects(collect(stream), (error: unknown) => {
    assert.equal(grpcCode(error), code, String(error));
    assert.match(String(error), pattern);
    return true;
  });
}

test("snapshot-metadata: allocated and changed blocks over TLS for an authorized token, refusals as upstream, the lister's table", async (t) => {
  const rbac = await startRbacCluster(t);
  const { admin } = rbac;
  await installSnapshotCrds(admin);

  // The driver, with a 64 KiB block volume: blocks 0 and 2 written, snapshot 1; block 2
  // rewritten and 3 written, snapshot 2.
  const socket = join(rbac.dir, "csi.sock");
  const driverState = join(rbac.dir, "hostpath");
  spawnComponent(t, {
    name: "driver",
    subcommand: "hostpath",
    args: [
      `--endpoint=unix://${socket}`,
      "--nodeid=node-a",
      `--drivername=${DRIVER}`,
      `--state-dir=${driverState}`,
      "--controller-service=true",
      "--node-service=false",
      "--enable-snapshot-metadata",
    ],
  });
  const csi = CsiClient.connect(socket, { timeoutMs: 30_000 });
  defer(t, () => csi.close());
  await csi.waitForReady({ timeoutMs: 60_000 });
  const volume = (
    await csi.controller.createVolume({
      name: "cbt",
      volumeCapabilities: [{ block: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
      capacityRange: { requiredBytes: 64 * KIB },
    })
  ).volume!;
  const image = join(driverState, "volumes", `${volume.volumeId}.img`);
  await writeBlock(image, 0, 1);
  await writeBlock(image, 8 * KIB, 2);
  const first = (await csi.controller.createSnapshot({ sourceVolumeId: volume.volumeId, name: "cbt-1" }))
    .snapshot!.snapshotId;
  await writeBlock(image, 8 * KIB, 3);
  await writeBlock(image, 12 * KIB, 4);
  const second = (await csi.controller.createSnapshot({ sourceVolumeId: volume.volumeId, name: "cbt-2" }))
    .snapshot!.snapshotId;
  for (const [name, handle] of [
    ["snap-1", first],
    ["snap-2", second],
  ] as const)
    await writeReadySnapshot(admin, {
      name,
      driver: DRIVER,
      handle,
      sizeBytes: 64 * KIB,
      sourceVolumeMode: "Block",
    });
  await writeReadySnapshot(admin, {
    name: "foreign",
    driver: "other.csi.k8s.io",
    handle: second,
    sizeBytes: 64 * KIB,
  });
  // Upstream reads the snapshotter secret of the snapshot's class: the driver's default one here.
  await admin.create(GVR.volumeSnapshotClasses, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotClass",
    metadata: {
      name: "csi-hostpath-snapclass",
      annotations: { "snapshot.storage.kubernetes.io/is-default-class": "true" },
    },
    driver: DRIVER,
    deletionPolicy: "Delete",
  } as KubeObject);

  // The sidecar under its own account, on loopback, with a certificate made for the test.
  const cert = await selfSignedServingCert("localhost", Date.now());
  const certFile = join(rbac.dir, "tls.crt");
  const keyFile = join(rbac.dir, "tls.key");
  await writeFile(certFile, cert.certPem, { mode: 0o600 });
  await writeFile(keyFile, cert.keyPem, { mode: 0o600 });
  const port = await freePort();
  const httpPort = await freePort();
  const kubeconfig = await rbac.componentKubeconfig("snapshot-metadata", {
    kind: "serviceAccount",
    namespace: "default",
    name: "csi-snapshot-metadata",
  });
  const sidecar = spawnComponent(t, {
    name: "snapshot-metadata",
    subcommand: "snapshot-metadata",
    args: [
      `--csi-address=${socket}`,
      `--kubeconfig=${kubeconfig}`,
      `--port=${port}`,
      "--bind-address=127.0.0.1",
      `--tls-cert=${certFile}`,
      `--tls-key=${keyFile}`,
      `--http-endpoint=127.0.0.1:${httpPort}`,
      "--tls-min-version=VersionTLS12",
    ],
  });
  await admin.create(GVR.snapshotMetadataServices, {
    apiVersion: "cbt.storage.k8s.io/v1beta1",
    kind: "SnapshotMetadataService",
    metadata: { name: DRIVER },
    spec: {
      address: `localhost:${port}`,
      caCert: Buffer.from(cert.certPem).toString("base64"),
      audience: AUDIENCE,
    },
  } as KubeObject);
  await until(
    async () => (await scrape(`http://127.0.0.1:${httpPort}/health`)).body === "ok",
    "the sidecar's /health",
    { timeoutMs: 60_000 },
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}\n${sidecar.output()}`);
  });

  const api = new SnapshotMetadataApiClient({ address: `localhost:${port}`, caPem: cert.certPem });
  defer(t, () => api.close());
  const token = await tokenFor(admin, "snapshot-metadata-lister", AUDIENCE);

  // Allowed: exactly the written blocks, FIXED_LENGTH, one range per message with max_results 1.
  const allocated = await collect(
    api.getMetadataAllocated({
      securityToken: token,
      namespace: "default",
      snapshotName: "snap-1",
      maxResults: 1,
    }),
  );
  assert.deepEqual(ranges(allocated), [
    [0, 4 * KIB],
    [8 * KIB, 4 * KIB],
  ]);
  assert.equal(allocated.length, 2);
  assert.ok(
    allocated.every(
      (m) => m.blockMetadataType === "FIXED_LENGTH" && m.volumeCapacityBytes === String(64 * KIB),
    ),
  );
  const delta = await collect(
    api.getMetadataDelta({
      securityToken: token,
      namespace: "default",
      baseSnapshotId: first,
      targetSnapshotName: "snap-2",
    }),
  );
  assert.deepEqual(ranges(delta), [
    [8 * KIB, 4 * KIB],
    [12 * KIB, 4 * KIB],
  ]);
  const resumed = await collect(
    api.getMetadataAllocated({
      securityToken: token,
      namespace: "default",
      snapshotName: "snap-2",
      startingOffset: 4 * KIB,
    }),
  );
  assert.deepEqual(ranges(resumed), [
    [8 * KIB, 4 * KIB],
    [12 * KIB, 4 * KIB],
  ]);

  // Refused, with upstream's codes.
  const wrongAudience = await tokenFor(admin, "snapshot-metadata-lister", "some-other-service");
  await rejectsWithCode(
    api.getMetadataAllocated({ securityToken: wrongAudience, namespace: "default", snapshotName: "snap-1" }),
    GrpcStatus.UNAUTHENTICATED,
    /unauthenticated user/,
  );
  await admin.create(GVR.serviceAccounts, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "no-rbac", namespace: "default" },
  });
  const unauthorized = await tokenFor(admin, "no-rbac", AUDIENCE);
  await rejectsWithCode(
    api.getMetadataDelta({
      securityToken: unauthorized,
      namespace: "default",
      baseSnapshotId: first,
      targetSnapshotName: "snap-2",
    }),
    GrpcStatus.PERMISSION_DENIED,
    /user does not have permissions to perform the operation/,
  );
  await rejectsWithCode(
    api.getMetadataAllocated({ securityToken: "", namespace: "default", snapshotName: "snap-1" }),
    GrpcStatus.INVALID_ARGUMENT,
    /securityToken is missing/,
  );
  await rejectsWithCode(
    api.getMetadataDelta({ securityToken: token, namespace: "default", targetSnapshotName: "snap-2" }),
    GrpcStatus.INVALID_ARGUMENT,
    /baseSnapshotId cannot be empty/,
  );
  await rejectsWithCode(
    api.getMetadataAllocated({ securityToken: token, namespace: "default", snapshotName: "missing" }),
    GrpcStatus.NOT_FOUND,
    /missing/,
  );
  await rejectsWithCode(
    api.getMetadataAllocated({ securityToken: token, namespace: "default", snapshotName: "foreign" }),
    GrpcStatus.INVALID_ARGUMENT,
    /does not belong to the CSI driver hostpath\.csi\.k8s\.io/,
  );
  await admin.create(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name: "pending", namespace: "default" },
    spec: { source: { persistentVolumeClaimName: "some-claim" } },
  } as KubeObject);
  await rejectsWithCode(
    api.getMetadataAllocated({ securityToken: token, namespace: "default", snapshotName: "pending" }),
    GrpcStatus.UNAVAILABLE,
    /not yet ready/,
  );

  // The lister, as the backup client's own account (its kubeconfig is that account's token).
  const listerKubeconfig = await rbac.serviceAccountKubeconfig("default", "snapshot-metadata-lister");
  const lister = async (...args: string[]): Promise<string> =>
    (
      await run(
        process.execPath,
        [
          MAIN,
          "snapshot-metadata",
          "list",
          `--kubeconfig=${listerKubeconfig}`,
          "--service-account=snapshot-metadata-lister",
          ...args,
        ],
        { timeout: 60_000 },
      )
    ).stdout;
  const table = await lister("--snapshot=default/snap-2", "--base=snap-1");
  assert.deepEqual(table.trimEnd().split("\n"), [
    "Record#   VolCapBytes  BlockMetadataType   ByteOffset     SizeBytes",
    "------- -------------- ----------------- -------------- --------------",
    "      1          65536      FIXED_LENGTH           8192           4096",
    "      1          65536      FIXED_LENGTH          12288           4096",
  ]);
  const json = JSON.parse(
    await lister("-n", "default", "-s", "snap-1", "-o", "json", "--max-results=1"),
  ) as unknown;
  assert.deepEqual(json, [
    { block_metadata_type: 1, volume_capacity_bytes: 65536, block_metadata: [{ size_bytes: 4096 }] },
    {
      block_metadata_type: 1,
      volume_capacity_bytes: 65536,
      block_metadata: [{ byte_offset: 8192, size_bytes: 4096 }],
    },
  ]);
  const byId = await lister("--snapshot=snap-2", "-n", "default", `--previous-snapshot-id=${first}`);
  assert.equal(byId, table);
  await assert.rejects(
    run(
      process.execPath,
      [
        MAIN,
        "snapshot-metadata",
        "list",
        `--kubeconfig=${listerKubeconfig}`,
        "--service-account=no-rbac",
        "--snapshot=default/snap-1",
      ],
      {
        timeout: 60_000,
      },
    ),
    (error: { stderr?: string }) => {
      assert.match(error.stderr ?? "", /PermissionDenied|forbidden/i);
      return true;
    },
  );

  // Metrics by outcome; nothing the Roles do not grant was asked for.
  const metrics = (await scrape(`http://127.0.0.1:${httpPort}/metrics`)).body;
  assert.match(
    metrics,
    /snapshot_metadata_controller_operations_seconds_count\{driver_name="hostpath\.csi\.k8s\.io",method_name="MetadataAllocated",grpc_status_code="OK",target_snapshot="snap-1",base_snapshot=""\} [1-9]/,
  );
  assert.match(metrics, /method_name="MetadataDelta",grpc_status_code="PermissionDenied"/);
  assert.match(metrics, /method_name="MetadataAllocated",grpc_status_code="Unauthenticated"/);
  assert.match(metrics, /method_name="\/csi\.v1\.Identity\/GetPluginCapabilities",grpc_status_code="OK"/);
  const refused = [
    ...forbidden(rbac.audit, "system:serviceaccount:default:csi-snapshot-metadata"),
    ...forbidden(rbac.audit, "system:serviceaccount:default:snapshot-metadata-lister"),
  ];
  assert.deepEqual(refused.map(describeEvent), []);
  assert.doesNotMatch(sidecar.output(), new RegExp(token.slice(-20)));
});
