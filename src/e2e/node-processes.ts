// The disruptive tests' hands on a `csikit up` cluster: upstream stops, starts and restarts the
// kubelet over SSH (systemctl); here the node agent (csikit's kubelet) and the node's driver are
// processes up supervises, recorded in its pids.json. A restart is a kill -9 that up's supervisor
// answers by starting the process again; "down" is SIGSTOP (the agent is frozen: no heartbeats,
// no reconciling, its pods' processes go on, as when systemd stops a kubelet) and SIGCONT.
// Every process a test froze is let go at its cleanup, whatever happened.

import { readFile } from "node:fs/promises";
import { GVR, type Node } from "../api/index.ts";
import { CsikitError } from "../base/index.ts";
import { ClusterLayout, pollUntil } from "../cluster/index.ts";
import type { KubeClient } from "../kube/index.ts";
import type { NodeProcesses } from "./suite.ts";
import { alive } from "./up-process.ts";

const RESTART_MS = 120_000;

export class UpNodeProcesses implements NodeProcesses {
  readonly #pidsFile: string;
  readonly #client: KubeClient;
  readonly #signal: AbortSignal;
  readonly #frozen = new Set<number>();

  constructor(stateDir: string, client: KubeClient, signal: AbortSignal) {
    this.#pidsFile = new ClusterLayout(stateDir).pidsFile;
    this.#client = client;
    this.#signal = signal;
  }

  async #pid(name: string): Promise<number | undefined> {
    const pids = JSON.parse(await readFile(this.#pidsFile, "utf8")) as Record<string, number>;
    const pid = pids[name];
    return typeof pid === "number" && alive(pid) ? pid : undefined;
  }

  async #running(name: string): Promise<number> {
    const pid = await this.#pid(name);
    if (pid === undefined) throw new CsikitError("CSIKIT_ERR_E2E_PROCESS", `${name} is not running`);
    return pid;
  }

  async #restart(name: string): Promise<number> {
    const old = await this.#running(name);
    process.kill(old, "SIGKILL");
    return pollUntil(`${name} to be started again`, RESTART_MS, this.#signal, async () => {
      const pid = await this.#pid(name);
      return pid !== undefined && pid !== old ? pid : undefined;
    });
  }

  async restartNodeAgent(node: string): Promise<void> {
    const killedAt = Date.now();
    await this.#restart(node);
    // Back when it reported the node again (its first status update after the start).
    await pollUntil(`node agent of ${node} to report again`, RESTART_MS, this.#signal, async () => {
      const object = await this.#client.get<Node>(GVR.nodes, node);
      const ready = object.status?.conditions?.find((c) => c.type === "Ready");
      const beat = Date.parse(ready?.lastHeartbeatTime ?? "");
      return ready?.status === "True" && beat >= Math.floor(killedAt / 1000) * 1000;
    });
  }

  async stopNodeAgent(node: string): Promise<void> {
    const pid = await this.#running(node);
    this.#frozen.add(pid);
    process.kill(pid, "SIGSTOP");
  }

  async startNodeAgent(node: string): Promise<void> {
    const pid = await this.#running(node);
    process.kill(pid, "SIGCONT");
    this.#frozen.delete(pid);
  }

  async restartNodeDriver(node: string): Promise<void> {
    await this.#restart(`${node}-driver`);
  }

  /** Lets every process this test froze go on. */
  release(): void {
    for (const pid of this.#frozen) if (alive(pid)) process.kill(pid, "SIGCONT");
    this.#frozen.clear();
  }
}
