// `csikit apiserver`: the embedded Kubernetes-compatible API server on its own. Parses flags,
// starts the server, prints where it listens and where the admin kubeconfig is, and runs
// until SIGINT/SIGTERM.

import { FlagError } from "../base/index.ts";
import {
  admissionChain,
  DEFAULT_ADMISSION_PLUGINS,
  parseAuthorizationModes,
  startApiServer,
} from "../apiserver/index.ts";
import type { Command } from "./command.ts";
import { DEFAULT_KUBERNETES_MINOR } from "../api/index.ts";
import { RELEASE_FLAGS, releaseFromFlags } from "./release-flags.ts";

export const apiserverCommand: Command = {
  name: "apiserver",
  summary: "Run the embedded Kubernetes-compatible API server (HTTPS, SQLite state)",
  usage: "csikit apiserver --state-dir=DIR [--port=N] [--bind-address=ADDR] [--kubeconfig-out=FILE] [flags]",
  description:
    `Serves the Kubernetes API as kube-apiserver ${DEFAULT_KUBERNETES_MINOR} does (or the release --kubernetes-version names), ` +
    "over HTTPS with a CA and admin token generated on first start under " +
    "<state-dir>/pki/, keeps objects in <state-dir>/apiserver.db and writes an admin kubeconfig to " +
    "<state-dir>/kubeconfig.",
  flags: {
    ...RELEASE_FLAGS,
    "state-dir": {
      type: "string",
      default: ".csikit",
      help: "Directory holding the database, certificates and kubeconfig.",
    },
    port: { type: "int", default: "0", help: "HTTPS port; 0 picks a free one (printed at start)." },
    "bind-address": {
      type: "string",
      default: "127.0.0.1",
      help: "Address to listen on. Widen only when needed.",
    },
    "kubeconfig-out": { type: "string", help: "Also write the admin kubeconfig to this file (mode 0600)." },
    "compaction-window": {
      type: "int",
      default: "10000",
      help: "Revisions of history kept for watch resume; older resourceVersions get 410 Gone.",
    },
    "enable-admission-plugins": {
      type: "strings",
      help: `Admission plugins to enable besides the defaults (${DEFAULT_ADMISSION_PLUGINS.join(", ")}), as kube-apiserver's flag.`,
    },
    "disable-admission-plugins": {
      type: "strings",
      help: "Admission plugins to disable, e.g. StorageObjectInUseProtection when no pvc-protection controller runs.",
    },
    "gc-finalizers": {
      type: "bool",
      default: "true",
      help:
        "Add the garbage collector's finalizers on delete (foregroundDeletion for propagationPolicy=Foreground, " +
        "orphan for Orphan), as kube-apiserver does. Without a garbage collector running, foreground/orphan " +
        "deletes stay pending, exactly as on a cluster whose controller-manager is down.",
    },
    "compaction-interval": {
      type: "duration",
      default: "5m",
      help: "How often the revision log is compacted.",
    },
    "watch-max-pending-bytes": {
      type: "int",
      default: String(16 * 1024 * 1024),
      help:
        "Unsent bytes one watch may hold; a watch whose client reads slower than changes arrive is ended " +
        "past this (as kube-apiserver ends an unresponsive watcher) and the client watches again.",
    },
    "authorization-mode": {
      type: "string",
      default: "AlwaysAllow",
      help:
        "How requests are authorized, as kube-apiserver's flag: a comma list asked in order, e.g. Node,RBAC. " +
        "Node (node identities system:node:<name> reach only what their pods use), RBAC (Roles, ClusterRoles " +
        "and their bindings; the admin kubeconfig's user is in system:masters and may do anything), " +
        "AlwaysAllow (any authenticated user may do anything), AlwaysDeny.",
    },
    "token-auth-file": {
      type: "string",
      help: 'Static bearer tokens in kube-apiserver\'s CSV format: token,user,uid,"group1,group2" per line.',
    },
    "service-account-issuer": {
      type: "string",
      default: "https://kubernetes.default.svc.cluster.local",
      help: "The iss claim of ServiceAccount tokens (TokenRequest, kubectl create token), and their default audience.",
    },
    "kubelet-certificate-authority": {
      type: "string",
      help:
        "Path to a cert file for the certificate authority the kubelets' serving certificates must chain to " +
        "(pods/log, pods/exec). Without it, as kube-apiserver, kubelet certificates are not verified.",
    },
    "kubelet-preferred-address-types": {
      type: "strings",
      default: "InternalIP,ExternalIP,Hostname",
      help:
        "List of the preferred NodeAddressTypes to use for kubelet connections (pods/log, pods/exec). " +
        "kube-apiserver's default starts with Hostname; this is kubeadm's order.",
    },
    "kubelet-timeout": {
      type: "duration",
      default: "5s",
      help: "Timeout for connecting to a kubelet (pods/log, pods/exec).",
    },
  },
  async run({ flags, logger, signal, stdout }) {
    const port = flags.number("port");
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new FlagError(`invalid value ${port} for flag -port: want 0..65535`);
    }
    const window = flags.number("compaction-window");
    if (!Number.isInteger(window) || window < 1) {
      throw new FlagError(`invalid value ${window} for flag -compaction-window: want a positive integer`);
    }
    const interval = flags.number("compaction-interval");
    if (!(interval > 0))
      throw new FlagError(`invalid value for flag -compaction-interval: want a positive duration`);
    const maxPending = flags.number("watch-max-pending-bytes");
    if (!Number.isInteger(maxPending) || maxPending < 1) {
      throw new FlagError(
        `invalid value ${maxPending} for flag -watch-max-pending-bytes: want a positive integer (bytes)`,
      );
    }
    const kubeconfigOut = flags.string("kubeconfig-out");
    let authorizationModes;
    try {
      authorizationModes = parseAuthorizationModes(flags.string("authorization-mode"));
    } catch (error) {
      throw new FlagError(
        `invalid value for flag -authorization-mode: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const tokenAuthFile = flags.string("token-auth-file");
    const kubeletCA = flags.string("kubelet-certificate-authority");
    const kubeletTimeout = flags.number("kubelet-timeout");
    if (!(kubeletTimeout > 0))
      throw new FlagError(`invalid value for flag -kubelet-timeout: want a positive duration`);
    const addressTypes = flags.strings("kubelet-preferred-address-types").filter((t) => t !== "");
    const known = ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"];
    for (const type of addressTypes)
      if (!known.includes(type))
        throw new FlagError(
          `invalid value ${JSON.stringify(type)} for flag -kubelet-preferred-address-types: want ${known.join(", ")}`,
        );
    let admission;
    try {
      admission = admissionChain({
        enable: flags.strings("enable-admission-plugins"),
        disable: flags.strings("disable-admission-plugins"),
      });
    } catch (error) {
      throw new FlagError(error instanceof Error ? error.message : String(error));
    }
    const release = releaseFromFlags(flags);
    const handle = await startApiServer(
      {
        release,
        stateDir: flags.string("state-dir"),
        port,
        bindAddress: flags.string("bind-address"),
        ...(kubeconfigOut !== "" ? { kubeconfigOut } : {}),
        compactionWindow: window,
        compactionIntervalMs: interval,
        watchMaxPendingBytes: maxPending,
        admission,
        gcFinalizers: flags.bool("gc-finalizers"),
        authorizationMode: authorizationModes,
        ...(tokenAuthFile !== "" ? { tokenAuthFile } : {}),
        serviceAccountIssuer: flags.string("service-account-issuer"),
        ...(kubeletCA !== "" ? { kubeletCertificateAuthority: kubeletCA } : {}),
        kubeletTimeoutMs: kubeletTimeout,
        kubeletPreferredAddressTypes: addressTypes,
        logger,
      },
      signal,
    );
    stdout.write(`API server listening on ${handle.url}\n`);
    stdout.write(`Kubernetes version: ${release.gitVersion}\n`);
    stdout.write(`kubeconfig: ${handle.kubeconfigPath}\n`);
    if (kubeconfigOut !== "") stdout.write(`kubeconfig: ${kubeconfigOut}\n`);
    await handle.stopped;
    return 0;
  },
};
