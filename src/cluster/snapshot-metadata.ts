// The snapshot-metadata service on `csikit up`, as a driver deployment ships it: a serving key
// pair for its TLS port (made once under <state-dir>/pki/, kept across runs so clients that
// pinned the CA keep working), the SnapshotMetadataService object named after the driver that
// advertises where it listens, the CA to trust and the audience callers' tokens must carry, and
// its CRD (deploy/crds) when nothing installed it yet. Idempotent: a second `up` replaces the
// object with the current port.

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { GVR, type SnapshotMetadataService } from "../api/index.ts";
import { isErrno, writeAtomic } from "../base/index.ts";
import { isAlreadyExists, selfSignedServingCert, type KubeClient, type KubeObject } from "../kube/index.ts";
import type { ClusterLayout } from "./layout.ts";
import { pollUntil } from "./poll.ts";

/** Instance name of the sidecar, and the key of its gRPC port in the plan's ports. */
export const SNAPSHOT_METADATA = "snapshot-metadata";
export const SNAPSHOT_METADATA_GRPC = "snapshot-metadata-grpc";

const CRD_FILE = fileURLToPath(
  new URL("../../deploy/crds/cbt.storage.k8s.io_snapshotmetadataservices.yaml", import.meta.url),
);

/** Where the sidecar's key pair lives. */
export function snapshotMetadataKeyPair(layout: ClusterLayout): { certFile: string; keyFile: string } {
  return {
    certFile: join(layout.stateDir, "pki", "snapshot-metadata.crt"),
    keyFile: join(layout.stateDir, "pki", "snapshot-metadata.key"),
  };
}

/** The audience `up` gives the service: the driver's name, as upstream's examples name theirs. */
export function snapshotMetadataAudience(driverName: string): string {
  return driverName;
}

/** The key pair's certificate (made on first use: self-signed for localhost and loopback). */
async function servingCert(layout: ClusterLayout): Promise<string> {
  const { certFile, keyFile } = snapshotMetadataKeyPair(layout);
  try {
    const [certPem] = await Promise.all([readFile(certFile, "utf8"), readFile(keyFile, "utf8")]);
    return certPem;
  } catch (error) {
    if (!isErrno(error, "ENOENT")) throw error;
  }
  const made = await selfSignedServingCert("localhost", Date.now());
  await writeAtomic(keyFile, made.keyPem, 0o600);
  await writeAtomic(certFile, made.certPem, 0o600);
  return made.certPem;
}

async function ensureCrd(client: KubeClient, signal: AbortSignal): Promise<void> {
  try {
    await client.get(
      GVR.customResourceDefinitions,
      "snapshotmetadataservices.cbt.storage.k8s.io",
      {},
      signal,
    );
    return;
  } catch {
    // Not there (or not readable yet): create it below.
  }
  try {
    await client.create(
      GVR.customResourceDefinitions,
      parse(await readFile(CRD_FILE, "utf8")) as KubeObject,
      signal,
    );
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  await pollUntil("the SnapshotMetadataService CRD served", 30_000, signal, async () => {
    await client.list(GVR.snapshotMetadataServices, { limit: 1 }, signal);
    return true;
  });
}

/** Writes the key pair if needed and creates or replaces the driver's SnapshotMetadataService. */
export async function advertiseSnapshotMetadata(
  client: KubeClient,
  options: { layout: ClusterLayout; driverName: string; port: number },
  signal: AbortSignal,
): Promise<void> {
  const certPem = await servingCert(options.layout);
  await ensureCrd(client, signal);
  const object: SnapshotMetadataService & KubeObject = {
    apiVersion: "cbt.storage.k8s.io/v1beta1",
    kind: "SnapshotMetadataService",
    metadata: { name: options.driverName },
    spec: {
      // localhost, not 127.0.0.1: a TLS client verifies the name (the certificate names both).
      address: `localhost:${options.port}`,
      caCert: Buffer.from(certPem).toString("base64"),
      audience: snapshotMetadataAudience(options.driverName),
    },
  };
  try {
    await client.create(GVR.snapshotMetadataServices, object, signal);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    const current = await client.get<KubeObject>(
      GVR.snapshotMetadataServices,
      options.driverName,
      {},
      signal,
    );
    await client.update(
      GVR.snapshotMetadataServices,
      {
        ...object,
        metadata: { ...object.metadata, resourceVersion: current.metadata?.resourceVersion },
      } as KubeObject,
      {},
      signal,
    );
  }
}
