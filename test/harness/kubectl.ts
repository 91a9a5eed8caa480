// The one kubectl fixture: runs the machine's real kubectl against a kubeconfig (the embedded
// API server's, or one `csikit up` wrote) and hands back its exit code and output, never
// throwing on a non-zero exit (tests assert refusals too). Its discovery cache goes next to the
// kubeconfig, not to ~/.kube (which an unprivileged run may not be able to write), and every run
// has a bound: a kubectl that hangs is killed and reported.

import { execFile, execFileSync } from "node:child_process";
import { dirname, join } from "node:path";

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubectlOptions {
  kubeconfig: string;
  /** Written to kubectl's stdin (for `apply -f -`). */
  stdin?: string | undefined;
  /** The bound on the run (default 60 s); kubectl is killed when it is reached. */
  timeoutMs?: number | undefined;
  /** Extra environment (e.g. KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false). */
  env?: Record<string, string> | undefined;
}

export function kubectl(args: readonly string[], options: KubectlOptions): Promise<KubectlResult> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const cacheDir = join(dirname(options.kubeconfig), "kubectl-cache");
  return new Promise((resolve, reject) => {
    const child = execFile(
      "kubectl",
      ["--kubeconfig", options.kubeconfig, "--cache-dir", cacheDir, ...args],
      {
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
        ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
      },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") {
          const why = error.killed ? `did not end within ${timeoutMs} ms` : `could not run: ${error.message}`;
          reject(new Error(`kubectl ${args.join(" ")} ${why}\n${stderr}`));
          return;
        }
        resolve({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
      },
    );
    child.stdin?.end(options.stdin);
  });
}

let installed: boolean | undefined;

/** A skip reason when kubectl is not installed (for `test(..., { skip: kubectlMissing() })`). */
export function kubectlMissing(): string | false {
  if (installed === undefined) {
    try {
      execFileSync("kubectl", ["version", "--client"], { stdio: "ignore", timeout: 30_000 });
      installed = true;
    } catch {
      installed = false;
    }
  }
  return installed ? false : "kubectl is not installed on this machine";
}
