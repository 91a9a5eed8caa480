// `csikit dashboard`: the live dashboard `up` serves, against any cluster a kubeconfig reaches
// (watches through the API server; without component metrics unless --metrics names them).

import { FlagError, whenAborted } from "../base/index.ts";
import { startDashboard, type Endpoint } from "../dashboard/index.ts";
import { KubeClient, loadKubeConfig } from "../kube/index.ts";
import type { Command } from "./command.ts";

/** --metrics: comma-separated http(s)://127.0.0.1:PORT/metrics URLs. */
function endpointsOf(value: string): Endpoint[] {
  if (value === "") return [];
  return value.split(",").map((url) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new FlagError(
        `invalid value ${JSON.stringify(url)} for flag -metrics: want http(s)://HOST:PORT/metrics`,
      );
    }
    if (!/^https?:$/.test(parsed.protocol))
      throw new FlagError(`invalid value ${JSON.stringify(url)} for flag -metrics: want http or https`);
    return { instance: parsed.host, what: parsed.host, url: parsed.href };
  });
}

export const dashboardCommand: Command = {
  name: "dashboard",
  summary:
    "Serve the live dashboard (claims' journeys, nodes, events, CSI metrics) for any cluster on loopback",
  usage: "csikit dashboard [--kubeconfig=FILE] [--listen=127.0.0.1:PORT] [--metrics=URL,...]",
  description:
    "Serves, over HTTPS on a loopback address with a self-signed certificate and a random token, the page\n" +
    "`csikit up` prints: nodes (zone, Ready, CSINode driver, attached vs allocatable), leader leases, every\n" +
    "claim's journey (provision → bind → schedule → attach → stage/publish → expand/modify/snapshot →\n" +
    "unpublish/detach → delete) with the step it waits in and the failed step's message, live events, and\n" +
    "actions behind a confirmation (create a claim and pod, grow, change VolumeAttributesClass, snapshot,\n" +
    "delete) done with the kubeconfig's identity. Reads the API server by watches only. Prints the address\n" +
    "with its token; runs until interrupted.",
  flags: {
    kubeconfig: {
      type: "string",
      help: "Path to a kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).",
    },
    listen: {
      type: "string",
      default: "127.0.0.1:0",
      help: "Loopback address and port to serve on (port 0: a free one).",
    },
    metrics: {
      type: "string",
      help: "Components' /metrics URLs to chart and health-check (their /healthz beside), comma-separated.",
    },
  },
  async run({ flags, logger, signal, stdout }) {
    const endpoints = endpointsOf(flags.string("metrics"));
    const client = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: flags.string("kubeconfig") }),
      qps: 50,
      burst: 100,
      userAgent: "csikit-dashboard",
    });
    try {
      let dashboard;
      try {
        dashboard = await startDashboard(
          { client, listen: flags.string("listen"), endpoints, logger },
          signal,
        );
      } catch (error) {
        if (error instanceof Error && /listen address|not loopback/.test(error.message))
          throw new FlagError(error.message);
        throw error;
      }
      stdout.write(`dashboard: ${dashboard.loginUrl}\n`);
      await whenAborted(signal);
      await dashboard.close();
      return 0;
    } finally {
      client.close();
    }
  },
};
