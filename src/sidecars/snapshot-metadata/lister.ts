// A backup application's side of the SnapshotMetadata API, as upstream's example
// snapshot-metadata-lister (pkg/iterator) does it: find the driver of the snapshot (its bound
// VolumeSnapshotContent), the driver's SnapshotMetadataService object (address, CA, audience),
// ask the API server for a token of the given ServiceAccount for that audience (TokenRequest),
// then stream GetMetadataAllocated (one snapshot) or GetMetadataDelta (changes since a base,
// given by name — turned into its CSI snapshot id through its content — or by id) over TLS, and
// print each record as upstream's table or JSON emitter does. The token is used and dropped,
// never printed.

import {
  GVR,
  type SnapshotMetadataService,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { CsikitError, errorMessage, isRecord } from "../../base/index.ts";
import { grpcDetails, SnapshotMetadataApiClient, type SnapshotMetadataApi } from "../../csi/index.ts";
import { grpcCode } from "../../csi/index.ts";
import { grpcCodeName, type KubeClient, type KubeObject } from "../../kube/index.ts";

export interface ListOptions {
  namespace: string;
  snapshotName: string;
  /** The base snapshot by VolumeSnapshot name (delta). */
  previousSnapshotName?: string;
  /** The base snapshot by CSI snapshot id (delta); wins over the name. */
  previousSnapshotId?: string;
  /** ServiceAccount namespace/name the token is requested for. */
  serviceAccount: { namespace: string; name: string };
  /** --token-expiry (600 s). */
  tokenExpirySeconds: number;
  startingOffset: number;
  maxResults: number;
  format: "table" | "json";
}

type Record_ = SnapshotMetadataApi.GetMetadataAllocatedResponse;

const listerError = (message: string): CsikitError =>
  new CsikitError("CSIKIT_ERR_SNAPSHOT_METADATA", message);

/** The bound content of a VolumeSnapshot (the driver, and the CSI id of a base). */
async function boundContent(
  client: KubeClient,
  namespace: string,
  name: string,
  signal: AbortSignal,
): Promise<VolumeSnapshotContent & KubeObject> {
  let snapshot: VolumeSnapshot & KubeObject;
  try {
    snapshot = await client.get(GVR.volumeSnapshots, name, { namespace }, signal);
  } catch (error) {
    throw listerError(`VolumeSnapshots.Get(${namespace}/${name}): ${errorMessage(error)}`);
  }
  const contentName = snapshot.status?.boundVolumeSnapshotContentName;
  if (!contentName)
    throw listerError(`VolumeSnapshot(${namespace}/${name}) has no bound VolumeSnapshotContent`);
  try {
    return await client.get(GVR.volumeSnapshotContents, contentName, {}, signal);
  } catch (error) {
    throw listerError(
      `VolumeSnapshotContents.Get(${contentName}) for VolumeSnapshot(${namespace}/${name}): ${errorMessage(error)}`,
    );
  }
}

async function securityToken(
  client: KubeClient,
  options: ListOptions,
  audience: string,
  signal: AbortSignal,
): Promise<string> {
  const { namespace, name } = options.serviceAccount;
  let response: unknown;
  try {
    response = await client.request<unknown>(
      {
        method: "POST",
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`,
        body: {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: { audiences: [audience], expirationSeconds: options.tokenExpirySeconds },
        },
      },
      signal,
    );
  } catch (error) {
    throw listerError(`ServiceAccounts.CreateToken(${namespace}/${name}): ${errorMessage(error)}`);
  }
  const token = isRecord(response) && isRecord(response.status) ? response.status.token : undefined;
  if (typeof token !== "string" || token === "")
    throw listerError(`ServiceAccounts.CreateToken(${namespace}/${name}) returned no token`);
  return token;
}

/** Upstream's table emitter: a header before the first record, one row per range. */
export function tableLines(recordNumber: number, record: Record_): string[] {
  const lines: string[] = [];
  if (recordNumber === 1)
    lines.push(
      "Record#   VolCapBytes  BlockMetadataType   ByteOffset     SizeBytes",
      "------- -------------- ----------------- -------------- --------------",
    );
  for (const range of record.blockMetadata)
    lines.push(
      [
        String(recordNumber).padStart(7),
        record.volumeCapacityBytes.padStart(14),
        record.blockMetadataType.padStart(17),
        range.byteOffset.padStart(14),
        range.sizeBytes.padStart(14),
      ].join(" "),
    );
  return lines;
}

const BLOCK_TYPE_NUMBERS: Readonly<Record<string, number>> = {
  UNKNOWN: 0,
  FIXED_LENGTH: 1,
  VARIABLE_LENGTH: 2,
};

/**
 * Upstream's JSON emitter: a list of records as Go encodes them (the enum as its number, int64
 * as a number; the protobuf structs' omitempty drops a zero offset).
 */
export function jsonRecord(record: Record_): string {
  const ranges = record.blockMetadata.map((range) => {
    const parts: string[] = [];
    if (range.byteOffset !== "0") parts.push(`"byte_offset":${range.byteOffset}`);
    if (range.sizeBytes !== "0") parts.push(`"size_bytes":${range.sizeBytes}`);
    return `{${parts.join(",")}}`;
  });
  return (
    `{"block_metadata_type":${BLOCK_TYPE_NUMBERS[record.blockMetadataType] ?? 0},` +
    `"volume_capacity_bytes":${record.volumeCapacityBytes},"block_metadata":${ranges.length ? `[${ranges.join(",")}]` : "null"}}`
  );
}

/** Streams the metadata and writes it to `write`; rejects with a message naming the step that failed. */
export async function listSnapshotMetadata(
  client: KubeClient,
  options: ListOptions,
  write: (text: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const target = await boundContent(client, options.namespace, options.snapshotName, signal);
  const driver = target.spec.driver;
  let service: SnapshotMetadataService & KubeObject;
  try {
    service = await client.get(GVR.snapshotMetadataServices, driver, {}, signal);
  } catch (error) {
    throw listerError(`SnapshotMetadataServices.Get(${driver}): ${errorMessage(error)}`);
  }
  let baseId = options.previousSnapshotId ?? "";
  if (baseId === "" && options.previousSnapshotName) {
    const base = await boundContent(client, options.namespace, options.previousSnapshotName, signal);
    baseId = base.status?.snapshotHandle ?? "";
    if (baseId === "")
      throw listerError(
        `VolumeSnapshot(${options.namespace}/${options.previousSnapshotName}) has no snapshot handle yet`,
      );
  }
  const token = await securityToken(client, options, service.spec.audience, signal);
  const caPem = Buffer.from(service.spec.caCert, "base64");
  if (!caPem.toString("utf8").includes("-----BEGIN CERTIFICATE-----"))
    throw listerError("failed to add the SnapshotMetadataService CR CA certificate");
  const api = new SnapshotMetadataApiClient({ address: service.spec.address, caPem });
  let records = 0;
  const call =
    baseId === ""
      ? `GetMetadataAllocated(${options.namespace},${options.snapshotName})`
      : `GetMetadataDelta(${options.namespace},${baseId},${options.snapshotName})`;
  try {
    const stream: AsyncIterable<Record_> =
      baseId === ""
        ? api.getMetadataAllocated(
            {
              securityToken: token,
              namespace: options.namespace,
              snapshotName: options.snapshotName,
              startingOffset: options.startingOffset,
              maxResults: options.maxResults,
            },
            signal,
          )
        : api.getMetadataDelta(
            {
              securityToken: token,
              namespace: options.namespace,
              baseSnapshotId: baseId,
              targetSnapshotName: options.snapshotName,
              startingOffset: options.startingOffset,
              maxResults: options.maxResults,
            },
            signal,
          );
    for await (const record of stream) {
      records++;
      if (options.format === "table") for (const line of tableLines(records, record)) write(`${line}\n`);
      else write(`${records === 1 ? "[" : ","}${jsonRecord(record)}`);
    }
  } catch (error) {
    // As Go prints a status error.
    const code = grpcCode(error);
    throw listerError(
      code === undefined
        ? `${call}: ${errorMessage(error)}`
        : `${call}: rpc error: code = ${grpcCodeName(code)} desc = ${grpcDetails(error)}`,
    );
  } finally {
    api.close();
  }
  if (options.format === "json") write(records === 0 ? "[]" : "]");
}
