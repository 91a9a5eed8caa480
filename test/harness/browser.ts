// Debian's Chromium driven by playwright-core (never a downloaded browser), for the dashboard's
// browser tests, bench and screenshot: headless, no sandbox (a container or user namespace has
// none to give), nothing fetched from the network, a fresh profile removed afterwards.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** Why the browser tests cannot run here, or undefined when they can. */
export function browserUnavailable(): string | undefined {
  if (!existsSync(CHROMIUM))
    return `${CHROMIUM} is absent (install Debian's chromium: npm run setup, as root)`;
  const probe = spawnSync(CHROMIUM, ["--headless", "--no-sandbox", "--disable-gpu", "--version"], {
    timeout: 20_000,
    encoding: "utf8",
  });
  if (probe.status !== 0)
    return `${CHROMIUM} does not start here: ${(probe.stderr || probe.error?.message || "").trim().slice(0, 200)}`;
  return undefined;
}

export interface OpenBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Chromium with a fresh profile (playwright passes it as --user-data-dir); the context accepts
 * the dashboard's certificate (loopback, signed by the cluster's CA the browser does not know).
 */
export async function openBrowser(viewport = { width: 1400, height: 1000 }): Promise<OpenBrowser> {
  const profile = await mkdtemp(join(tmpdir(), "csikit-chromium-"));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      timeout: 180_000,
      ignoreHTTPSErrors: true,
      viewport,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    return {
      context,
      close: async () => {
        await context.close().catch(() => {});
        await rm(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
}
