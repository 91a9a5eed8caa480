// The dashboard in Debian's Chromium (playwright-core, never a downloaded browser). Two parts:
// against a real API server alone (token and 401, an attach error shown red with its message,
// 1,000 claims rendered and scrolled), and against a real `csikit up` (a claim made with
// kubectl walks to published live; the page's create form yields a Running pod). Every wait is
// bounded; the browser, its profile, the cluster and temp dirs go away even when a case fails.
// Without /usr/bin/chromium (or where it cannot start) the file skips, saying why.

import assert from "node:assert/strict";
import { request } from "node:https";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
} from "../../src/api/index.ts";
import { startDashboard, type Dashboard } from "../../src/dashboard/index.ts";
import { KubeClient, loadKubeConfig } from "../../src/kube/index.ts";
import { startTestServer, type TestServer } from "../harness/apiserver.ts";
import { browserUnavailable, openBrowser, type OpenBrowser } from "../harness/browser.ts";
import { kubectl } from "../harness/kubectl.ts";
import { hasKubectl, SKIP, START_MS, startUp, STEP_MS, stopUp, type UpProcess } from "../harness/up.ts";
import { until } from "../harness/until.ts";

const noBrowser = browserUnavailable();
if (noBrowser) console.log(`# dashboard browser tests skipped: ${noBrowser}`);
/** Chromium's start on a loaded 2-core machine can take minutes. */
const PAGE_MS = 240_000;

function status(url: string, cookie?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { rejectUnauthorized: false, headers: cookie ? { cookie } : {} }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("dashboard against a real API server", { skip: noBrowser ?? false }, () => {
  let server: TestServer;
  let client: KubeClient;
  let dashboard: Dashboard;
  let browser: OpenBrowser | undefined;
  const stop = new AbortController();

  before(async () => {
    server = await startTestServer();
    client = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: server.handle.kubeconfigPath }),
      qps: 500,
      burst: 1000,
    });
    dashboard = await startDashboard({ client }, stop.signal);
    browser = await openBrowser();
  });

  after(async () => {
    await browser?.close();
    stop.abort();
    await dashboard?.close();
    client?.close();
    await server?.dispose();
  });

  test("refuses without the token (401), serves with it, and sets an HttpOnly SameSite=Strict cookie", async () => {
    assert.equal(await status(dashboard.url), 401);
    assert.equal(await status(`${dashboard.url}live`), 401);
    assert.equal(await status(`${dashboard.url}?token=wrong`), 401);
    assert.equal(await status(`${dashboard.url}live`, "csikit_dashboard=wrong"), 401);
    const page = await browser!.context.newPage();
    await page.goto(dashboard.loginUrl);
    assert.equal(new URL(page.url()).search, "", "the token leaves the address bar");
    await page.getByText("live: connected").waitFor({ timeout: PAGE_MS });
    const cookie = (await browser!.context.cookies()).find((c) => c.name === "csikit_dashboard");
    assert.ok(cookie);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, "Strict");
    await page.close();
  });

  test("an attach error shows as a red (✗ failed) attach step with its message", async () => {
    const ns = "default";
    await client.create<PersistentVolume>(GVR.persistentVolumes, {
      metadata: { name: "dash-pv" },
      spec: {
        capacity: { storage: "1Mi" },
        accessModes: ["ReadWriteOnce"],
        persistentVolumeReclaimPolicy: "Retain",
        storageClassName: "",
        claimRef: { namespace: ns, name: "dash-claim" },
        csi: { driver: "fake.csi.example.com", volumeHandle: "vol-1" },
      },
    });
    await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      metadata: { name: "dash-claim", namespace: ns },
      spec: {
        accessModes: ["ReadWriteOnce"],
        storageClassName: "",
        volumeName: "dash-pv",
        resources: { requests: { storage: "1Mi" } },
      },
    });
    const va = await client.create<VolumeAttachment>(GVR.volumeAttachments, {
      metadata: { name: "dash-va" },
      spec: {
        attacher: "fake.csi.example.com",
        nodeName: "node-x",
        source: { persistentVolumeName: "dash-pv" },
      },
    });
    await client.updateStatus<VolumeAttachment>(GVR.volumeAttachments, {
      ...va,
      status: {
        attached: false,
        attachError: { message: "rpc error: code = Internal desc = injected by the test" },
      },
    });
    const page = await browser!.context.newPage();
    await page.goto(dashboard.loginUrl);
    const step = page.locator('[data-claim="default/dash-claim"] [data-step="attach"]');
    await step.and(page.locator('[data-state="failed"]')).waitFor({ timeout: PAGE_MS });
    assert.match((await step.textContent()) ?? "", /✗ attach failed/);
    const row = page.locator('[data-claim="default/dash-claim"]');
    assert.match(
      (await row.textContent()) ?? "",
      /failed at attach: rpc error: code = Internal desc = injected by the test/,
    );
    // Keyboard: the list takes focus, arrows select, Enter opens the claim's detail.
    await page.locator("#claim-list").focus();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    await page.locator("#detail h3").getByText("default/dash-claim").waitFor({ timeout: STEP_MS });
    await page.close();
  });

  test("1,000 claims render (virtualised) and scroll to the last", async () => {
    const names = Array.from({ length: 1000 }, (_, i) => `bulk-${String(i).padStart(4, "0")}`);
    for (let i = 0; i < names.length; i += 50)
      await Promise.all(
        names.slice(i, i + 50).map((name) =>
          client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
            metadata: { name, namespace: "default" },
            spec: {
              accessModes: ["ReadWriteOnce"],
              storageClassName: "none",
              resources: { requests: { storage: "1Mi" } },
            },
          }),
        ),
      );
    const page = await browser!.context.newPage();
    await page.goto(dashboard.loginUrl);
    await page.locator("#claim-filter").fill("bulk-");
    await page.getByText("(1000 of").waitFor({ timeout: PAGE_MS });
    const inDom = await page.locator("#claim-list [data-claim]").count();
    assert.ok(inDom < 100, `only the rows in view exist in the DOM (${inDom})`);
    await page.locator("#claim-list").evaluate((list) => {
      list.scrollTop = list.scrollHeight;
    });
    await page.locator('[data-claim="default/bulk-0999"]').waitFor({ timeout: STEP_MS });
    await page.locator("#claim-list").focus();
    await page.keyboard.press("Home");
    await page.locator('[data-claim="default/bulk-0000"]').waitFor({ timeout: STEP_MS });
    await page.close();
  });
});

describe("dashboard of csikit up", { skip: noBrowser ?? SKIP }, () => {
  let base = "";
  let stateDir = "";
  let up: UpProcess | undefined;
  let client: KubeClient;
  let browser: OpenBrowser | undefined;
  let loginUrl = "";

  before(async () => {
    base = await mkdtemp(join(tmpdir(), "csikit-dash-"));
    stateDir = join(base, "state");
    up = startUp(stateDir);
    loginUrl = await until(
      () => {
        const text = up!.output();
        if (/✗/.test(text) || up!.child.exitCode !== null) throw new Error(`up failed:\n${text}`);
        if (!/cluster ready in/.test(text)) return undefined;
        return /dashboard: (https:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(text)?.[1];
      },
      "up to be ready with its dashboard line",
      { timeoutMs: START_MS },
    );
    client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "kubeconfig") }) });
    browser = await openBrowser();
  });

  after(async () => {
    await browser?.close();
    client?.close();
    await stopUp(up, stateDir);
    await rm(base, { recursive: true, force: true });
  });

  test("prints the dashboard line", () => {
    assert.match(up!.output(), /^dashboard: https:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{20,}$/m);
  });

  test(
    "a claim made with kubectl appears and walks to bound, attached and published live",
    { skip: hasKubectl ? false : "kubectl not found" },
    async () => {
      const page = await browser!.context.newPage();
      await page.goto(loginUrl);
      await page.getByText("live: connected").waitFor({ timeout: PAGE_MS });
      await page.locator('#nodes [data-node="node-1"]').getByText("✓ Ready").waitFor({ timeout: STEP_MS });
      const manifest = [
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: kube-claim, namespace: default}",
        "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}",
        "---",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: kube-pod, namespace: default}",
        "spec:\n  containers: [{name: app, image: busybox, command: [sleep, '3600'], volumeMounts: [{name: d, mountPath: /data}]}]",
        "  volumes: [{name: d, persistentVolumeClaim: {claimName: kube-claim}}]",
      ].join("\n");
      const applied = await kubectl(["apply", "-f", "-"], {
        kubeconfig: join(stateDir, "kubeconfig"),
        stdin: manifest,
      });
      assert.equal(applied.code, 0, applied.stderr);
      const row = page.locator('[data-claim="default/kube-claim"]');
      await row.waitFor({ timeout: STEP_MS });
      for (const step of ["provision", "bind", "schedule", "attach", "publish"])
        await row.locator(`[data-step="${step}"][data-state="done"]`).waitFor({ timeout: STEP_MS });
      assert.equal(await row.getAttribute("data-phase"), "Bound");
      await page.close();
    },
  );

  test("the create-claim form (behind a confirmation) produces a Running pod", async () => {
    const page = await browser!.context.newPage();
    await page.goto(loginUrl);
    await page.getByText("live: connected").waitFor({ timeout: PAGE_MS });
    await page.getByRole("button", { name: "New claim + pod…" }).click();
    await page.locator("#create-dialog[open]").waitFor({ timeout: STEP_MS });
    await page.locator('#create-form [name="name"]').fill("form-claim");
    await page.locator("#create-submit").click();
    await page.locator("#confirm-dialog[open]").waitFor({ timeout: STEP_MS });
    assert.match(
      (await page.locator("#confirm-text").textContent()) ?? "",
      /Create claim default\/form-claim/,
    );
    await page.locator("#confirm-ok").click();
    await until(
      async () => {
        const pod = await client
          .get<Pod>(GVR.pods, "form-claim-pod", { namespace: "default" })
          .catch(() => undefined);
        return pod?.status?.phase === "Running" ? pod : undefined;
      },
      "the form's pod to run",
      { timeoutMs: STEP_MS },
    );
    await page
      .locator('[data-claim="default/form-claim"] [data-step="publish"][data-state="done"]')
      .waitFor({ timeout: STEP_MS });
    await page.close();
  });
});
