// `csikit snapshot-metadata`: the external-snapshot-metadata sidecar; and
// `csikit snapshot-metadata list`: a backup application's lister of a snapshot's allocated or
// changed blocks, as upstream's snapshot-metadata-lister example. Flags are upstream's (see
// src/sidecars/snapshot-metadata/flags.ts and lister-flags.ts); this file only turns them into
// options and runs them.

import { kubeClientFromOptions } from "../kube/index.ts";
import {
  LISTER_FLAGS,
  SNAPSHOT_METADATA_FLAGS,
  listOptionsFromFlags,
  listSnapshotMetadata,
  podIdentity,
  runSnapshotMetadata,
  snapshotMetadataOptionsFromFlags,
} from "../sidecars/snapshot-metadata/index.ts";
import type { Command } from "./command.ts";

export const snapshotMetadataCommand: Command = {
  name: "snapshot-metadata",
  summary:
    "Run the external-snapshot-metadata sidecar: the Kubernetes SnapshotMetadata API (changed-block tracking) over TLS",
  usage: "csikit snapshot-metadata --csi-address=/run/csi/socket --tls-cert=FILE --tls-key=FILE [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-snapshot-metadata v1.1: serves\n" +
    "/snapshotmetadata.SnapshotMetadata/GetMetadataAllocated and GetMetadataDelta to backup\n" +
    "applications over TLS, authenticates each caller's audience-scoped ServiceAccount token\n" +
    "(TokenReview; audience from --audience or the driver's SnapshotMetadataService object),\n" +
    "authorizes it to get volumesnapshots in the namespace (SubjectAccessReview), and proxies to\n" +
    "the driver's CSI SnapshotMetadata service. /health and the metrics on --http-endpoint.\n" +
    "Environment: TLS_CERT_PATH, TLS_KEY_PATH. `csikit snapshot-metadata list --help`: the lister.",
  flags: SNAPSHOT_METADATA_FLAGS,
  async run({ flags, logger, signal }) {
    const options = snapshotMetadataOptionsFromFlags(flags);
    await runSnapshotMetadata({ ...options, logger }, signal);
    return 0;
  },
};

export const snapshotMetadataListCommand: Command = {
  name: "snapshot-metadata list",
  summary:
    "List a VolumeSnapshot's allocated blocks, or those changed since a base snapshot (SnapshotMetadata API)",
  usage:
    "csikit snapshot-metadata list --snapshot NAMESPACE/NAME [--base NAME] --service-account NAME [flags]",
  description:
    "What upstream's snapshot-metadata-lister example does: finds the driver's\n" +
    "SnapshotMetadataService, requests a token of --service-account for its audience\n" +
    "(serviceaccounts/token create), and prints the ranges as a table or JSON.",
  flags: LISTER_FLAGS,
  async run({ flags, signal, stdout }) {
    const options = listOptionsFromFlags(flags, await podIdentity());
    const client = kubeClientFromOptions({
      kubeconfig: flags.string("kubeconfig"),
      master: "",
      kubeApiQps: 5,
      kubeApiBurst: 10,
      userAgent: "snapshot-metadata-lister",
    });
    try {
      await listSnapshotMetadata(client, options, (text) => stdout.write(text), signal);
    } finally {
      client.close();
    }
    return 0;
  },
};
