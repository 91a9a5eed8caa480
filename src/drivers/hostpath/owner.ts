// Guards the one-writer rule of controller.json: the controller instance records its PID in
// `<state-dir>/controller.pid` and refuses to start while another live process holds it. A
// PID file left by a killed process (kill -9) names a dead PID and is taken over.

import { open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { CsikitError, isErrno } from "../../base/index.ts";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isErrno(error, "EPERM");
  }
}

/** Claims the state dir for this process; resolves with the release function. */
export async function claimControllerState(stateDir: string): Promise<() => Promise<void>> {
  const file = join(stateDir, "controller.pid");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, "wx", 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.sync();
      await handle.close();
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        await unlink(file).catch(() => undefined);
      };
    } catch (error) {
      if (!isErrno(error, "EEXIST")) throw error;
    }
    const pid = Number((await readFile(file, "utf8").catch(() => "")).trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))
      throw new CsikitError(
        "CSIKIT_ERR_STATE_IN_USE",
        `state dir ${stateDir} is in use by the hostpath controller with pid ${pid}; give each controller instance its own --state-dir`,
      );
    await unlink(file).catch(() => undefined);
  }
  throw new CsikitError("CSIKIT_ERR_STATE_IN_USE", `cannot claim ${file}: another process keeps creating it`);
}
