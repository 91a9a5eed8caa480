// One measured process of `npm run bench:resize-inuse`: the resizer started in-process from its
// real flags (as `csikit resizer` does), in one of three modes —
//   on:       --handle-volume-inuse-error=true (csikit: pods listed per namespace on demand);
//   off:      --handle-volume-inuse-error=false;
//   informer: on, plus a cluster-wide pod informer — the cache upstream keeps for the option
//             (external-resizer#211), emulated on the same client stack to show what it costs.
// After the resizer started (and the informer synced), it idles for the settle time with the
// in-use claims being retried, collects garbage, and prints one JSON line of process memory.
// argv: <kubeconfig> <csi socket> <mode> <settle ms>

import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { GVR, type Pod } from "../src/api/index.ts";
import { Flags, LOGGING_FLAGS, parseFlags, silentLogger } from "../src/base/index.ts";
import { InformerFactory, KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { RESIZER_FLAGS, resizerOptionsFromFlags, startResizer } from "../src/sidecars/resizer/index.ts";

const [kubeconfig, socket, mode, settle] = process.argv.slice(2);
if (!kubeconfig || !socket || !mode || !settle)
  throw new Error("usage: <kubeconfig> <socket> <mode> <settle ms>");

const controller = new AbortController();
process.once("SIGTERM", () => controller.abort());
const flags = new Flags(
  parseFlags({ ...LOGGING_FLAGS, ...RESIZER_FLAGS }, [
    `--csi-address=${socket}`,
    `--kubeconfig=${kubeconfig}`,
    `--handle-volume-inuse-error=${mode !== "off"}`,
    "--kube-api-qps=1000",
    "--kube-api-burst=1000",
    "--retry-interval-start=100ms",
    "--retry-interval-max=1s",
  ]),
);
const running = startResizer({ ...resizerOptionsFromFlags(flags), logger: silentLogger }, controller.signal);
running.catch((error: unknown) => {
  process.stderr.write(`resizer failed: ${String(error)}\n`);
  process.exit(1);
});
let podsCached = 0;
if (mode === "informer") {
  const client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig }), qps: 1000, burst: 1000 });
  const factory = new InformerFactory({ client, logger: silentLogger });
  const pods = factory.informer<Pod>(GVR.pods);
  void factory.start(controller.signal);
  await pods.waitForSync(controller.signal);
  podsCached = pods.store.size;
}
await sleep(Number(settle));
globalThis.gc?.();
await sleep(200);
const usage = process.memoryUsage();
const hwm = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"));
process.stdout.write(
  `${JSON.stringify({
    rssMiB: usage.rss / 2 ** 20,
    heapUsedMiB: usage.heapUsed / 2 ** 20,
    peakRssMiB: hwm ? Number(hwm[1]) / 1024 : NaN,
    podsCached,
  })}\n`,
);
await running.catch(() => undefined);
