// The sidecar's and the lister's pure parts: upstream's flag defaults and validation (the
// TLS_CERT_PATH/TLS_KEY_PATH fallback, the Go TLS names and their refusals), the lister's
// reference forms, and its output exactly as upstream's table and JSON emitters print it.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Flags, FlagError, parseFlags } from "../../base/index.ts";
import { LISTER_FLAGS, listOptionsFromFlags } from "./lister-flags.ts";
import { jsonRecord, tableLines } from "./lister.ts";
import { SNAPSHOT_METADATA_FLAGS, snapshotMetadataOptionsFromFlags } from "./flags.ts";
import { tlsParameters } from "./tls-config.ts";

const sidecarFlags = (...argv: string[]) => new Flags(parseFlags(SNAPSHOT_METADATA_FLAGS, argv));
const listerFlags = (...argv: string[]) => new Flags(parseFlags(LISTER_FLAGS, argv));

test("sidecar flags: upstream's defaults, the key pair from the environment, bad values named", () => {
  const options = snapshotMetadataOptionsFromFlags(sidecarFlags(), {
    TLS_CERT_PATH: "/certs/tls.crt",
    TLS_KEY_PATH: "/certs/tls.key",
  });
  assert.equal(options.port, 50051);
  assert.equal(options.csiAddress, "/run/csi/socket");
  assert.equal(options.timeoutMs, 60_000);
  assert.equal(options.maxStreamingDurationMs, 10 * 60_000);
  assert.equal(options.httpEndpoint, ":8080");
  assert.equal(options.kubeApiQps, 5);
  assert.equal(options.kubeApiBurst, 10);
  assert.equal(options.tlsCertFile, "/certs/tls.crt");
  assert.equal(options.audience, "");
  assert.throws(() => snapshotMetadataOptionsFromFlags(sidecarFlags(), {}), /missing TLSCertFile/);
  assert.throws(
    () => snapshotMetadataOptionsFromFlags(sidecarFlags("--tls-cert=a", "--tls-key=b", "--port=0"), {}),
    /invalid GRPCPort/,
  );
});

test("TLS flags in Go's names become Node's; unknown ones are refused with upstream's messages", () => {
  assert.deepEqual(
    tlsParameters({
      minVersion: "VersionTLS13",
      cipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256",
      curvePreferences: "X25519,CurveP256",
    }),
    { minVersion: "TLSv1.3", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256", ecdhCurve: "X25519:prime256v1" },
  );
  assert.deepEqual(tlsParameters({ minVersion: "", cipherSuites: "", curvePreferences: "" }), {});
  assert.throws(
    () => tlsParameters({ minVersion: "VersionTLS10", cipherSuites: "", curvePreferences: "" }),
    /unsupported TLS version "VersionTLS10", must be one of: VersionTLS12, VersionTLS13/,
  );
  assert.throws(
    () => tlsParameters({ minVersion: "", cipherSuites: "TLS_RSA_WITH_RC4_128_SHA", curvePreferences: "" }),
    /unsupported or insecure cipher suite: "TLS_RSA_WITH_RC4_128_SHA"/,
  );
  assert.throws(
    () => tlsParameters({ minVersion: "", cipherSuites: "", curvePreferences: "P-256" }),
    (error: unknown) => error instanceof FlagError && /unsupported curve "P-256"/.test(error.message),
  );
});

test("lister flags: upstream's shorthands, ns/name, the base by name or by id, not both", () => {
  const short = listOptionsFromFlags(listerFlags("-n", "apps", "-s", "db-2", "-p", "db-1", "-o", "json"), {
    serviceAccount: "backup",
  });
  assert.equal(short.namespace, "apps");
  assert.equal(short.snapshotName, "db-2");
  assert.equal(short.previousSnapshotName, "db-1");
  assert.equal(short.format, "json");
  assert.deepEqual(short.serviceAccount, { namespace: "apps", name: "backup" });
  assert.equal(short.tokenExpirySeconds, 600);
  const long = listOptionsFromFlags(
    listerFlags(
      "--snapshot=apps/db-2",
      "--base=apps/db-1",
      "--service-account=backup",
      "--service-account-namespace=ops",
    ),
  );
  assert.equal(long.namespace, "apps");
  assert.equal(long.previousSnapshotName, "db-1");
  assert.deepEqual(long.serviceAccount, { namespace: "ops", name: "backup" });
  const byId = listOptionsFromFlags(listerFlags("-s", "apps/db-2", "-P", "snap-123", "--service-account=b"));
  assert.equal(byId.previousSnapshotId, "snap-123");
  assert.throws(
    () =>
      listOptionsFromFlags(listerFlags("-s", "apps/db-2", "-p", "db-1", "-P", "x", "--service-account=b")),
    /not both/,
  );
  assert.throws(
    () => listOptionsFromFlags(listerFlags("-s", "db-2", "--service-account=b")),
    /missing -namespace/,
  );
  assert.throws(() => listOptionsFromFlags(listerFlags("-s", "apps/db-2")), /missing -service-account/);
  assert.throws(
    () => listOptionsFromFlags(listerFlags("-s", "apps/db-2", "--base=other/db-1", "--service-account=b")),
    /must be in the snapshot's namespace/,
  );
  assert.throws(
    () => listOptionsFromFlags(listerFlags("-s", "apps/db-2", "-o", "yaml", "--service-account=b")),
    /Unknown output format: yaml/,
  );
});

test("the lister prints upstream's table and JSON", () => {
  const record = {
    blockMetadataType: "VARIABLE_LENGTH" as const,
    volumeCapacityBytes: "1099511627776",
    blockMetadata: [
      { byteOffset: "0", sizeBytes: "8192" },
      { byteOffset: "1048576", sizeBytes: "4096" },
    ],
  };
  assert.deepEqual(tableLines(1, record), [
    "Record#   VolCapBytes  BlockMetadataType   ByteOffset     SizeBytes",
    "------- -------------- ----------------- -------------- --------------",
    "      1  1099511627776   VARIABLE_LENGTH              0           8192",
    "      1  1099511627776   VARIABLE_LENGTH        1048576           4096",
  ]);
  assert.equal(tableLines(2, record).length, 2);
  assert.equal(
    jsonRecord(record),
    '{"block_metadata_type":2,"volume_capacity_bytes":1099511627776,"block_metadata":[{"size_bytes":8192},{"byte_offset":1048576,"size_bytes":4096}]}',
  );
  assert.equal(
    jsonRecord({ ...record, blockMetadata: [] }),
    '{"block_metadata_type":2,"volume_capacity_bytes":1099511627776,"block_metadata":null}',
  );
});
