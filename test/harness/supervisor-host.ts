// A stand-in for `csikit up` as a supervisor only: a process that starts, under the real
// Supervisor, one csikit component (hostpath: it watches for the supervisor itself) and one
// command that is not csikit's (sleep: a shell watches for it), prints READY with their pids,
// and runs until killed. Tests kill it with SIGKILL and watch what its children do.
// Usage: node supervisor-host.ts <dir> <path of src/cli/main.ts>

import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { silentLogger } from "../../src/base/index.ts";
import { Supervisor } from "../../src/cluster/index.ts";

const [dir = "", main = ""] = process.argv.slice(2);
await mkdir(join(dir, "logs"), { recursive: true });
const supervisor = new Supervisor({ logger: silentLogger, pidsFile: join(dir, "pids.json") });
supervisor.start({
  name: "driver",
  command: process.execPath,
  args: [
    main,
    "hostpath",
    `--endpoint=unix://${join(dir, "csi.sock")}`,
    "--nodeid=node-1",
    `--state-dir=${join(dir, "hostpath")}`,
  ],
  logFile: join(dir, "logs", "driver.log"),
  watchesSupervisor: true,
});
supervisor.start({
  name: "user-driver",
  command: "sleep",
  args: ["600"],
  logFile: join(dir, "logs", "user-driver.log"),
});
const pids = (): Record<string, number | undefined> => ({
  driver: supervisor.get("driver")?.pid,
  userDriver: supervisor.get("user-driver")?.pid,
});
process.stdout.write(`READY ${JSON.stringify(pids())}\n`);
setInterval(() => {}, 60_000);
