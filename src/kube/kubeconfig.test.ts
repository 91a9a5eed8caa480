// The kubeconfig loader against real files in temp dirs: every honoured field, relative paths,
// merging of a $KUBECONFIG list, exec credential plugins (a tiny shell script), the in-cluster
// service account with its rotating token, and the errors bad files get.

import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { CsikitError, FakeClock } from "../base/index.ts";
import { loadKubeConfig } from "./kubeconfig.ts";

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), "csikit-kubeconfig-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A one-context kubeconfig document with the given cluster and user fields. */
function doc(cluster: Record<string, unknown>, user: Record<string, unknown>, namespace?: string): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://10.0.0.1:6443", ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u", ...(namespace ? { namespace } : {}) } }],
    "current-context": "ctx",
  });
}

function write(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const load = (path: string, clock = new FakeClock()) => loadKubeConfig({ kubeconfig: path, env: {}, clock });

const rejectsWith = (fn: () => unknown, pattern: RegExp): void =>
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof CsikitError, String(error));
    assert.match(error.message, pattern);
    return true;
  });

test("cluster fields: server, CA data, tls-server-name, namespace; token user", async (t) => {
  const dir = tempDir(t);
  const path = write(
    dir,
    "config",
    doc(
      {
        "certificate-authority-data": Buffer.from("CA-PEM").toString("base64"),
        "tls-server-name": "api.local",
      },
      { token: "abc" },
      "team-a",
    ),
  );
  const config = load(path);
  assert.equal(config.server, "https://10.0.0.1:6443");
  assert.equal(config.namespace, "team-a");
  assert.equal(config.tls.ca?.toString(), "CA-PEM");
  assert.equal(config.tls.servername, "api.local");
  assert.equal(config.tls.rejectUnauthorized, undefined);
  assert.deepEqual((await config.auth.credentials()).headers, { authorization: "Bearer abc" });
});

test("relative certificate files resolve against the kubeconfig's directory; insecure-skip-tls-verify", (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, "kube", "pki"), { recursive: true });
  write(dir, "kube/pki/ca.crt", "CA");
  write(dir, "kube/pki/client.crt", "CERT");
  write(dir, "kube/pki/client.key", "KEY");
  const path = write(
    dir,
    "kube/config",
    doc(
      { "certificate-authority": "pki/ca.crt" },
      { "client-certificate": "pki/client.crt", "client-key": join(dir, "kube/pki/client.key") },
    ),
  );
  const config = load(path);
  assert.equal(config.tls.ca?.toString(), "CA");
  assert.equal(config.tls.cert?.toString(), "CERT");
  assert.equal(config.tls.key?.toString(), "KEY");
  const data = load(
    write(
      dir,
      "data",
      doc(
        { "insecure-skip-tls-verify": true },
        {
          "client-certificate-data": Buffer.from("C2").toString("base64"),
          "client-key-data": Buffer.from("K2").toString("base64"),
        },
      ),
    ),
  );
  assert.equal(data.tls.rejectUnauthorized, false);
  assert.equal(data.tls.cert?.toString(), "C2");
  assert.equal(data.tls.key?.toString(), "K2");
});

test("username/password, impersonation, and tokenFile re-read once a minute", async (t) => {
  const dir = tempDir(t);
  const basic = load(
    write(
      dir,
      "basic",
      doc({}, { username: "admin", password: "pw", as: "jane", "as-groups": ["g1", "g2"] }),
    ),
  );
  assert.deepEqual((await basic.auth.credentials()).headers, {
    authorization: `Basic ${Buffer.from("admin:pw").toString("base64")}`,
    "impersonate-user": "jane",
    "impersonate-group": ["g1", "g2"],
  });
  write(dir, "token", "first\n");
  const clock = new FakeClock();
  const config = load(write(dir, "file", doc({}, { tokenFile: "token" })), clock);
  const bearer = async (): Promise<string | string[] | undefined> =>
    (await config.auth.credentials()).headers.authorization;
  assert.equal(await bearer(), "Bearer first");
  write(dir, "token", "second\n");
  await clock.advance(59_000);
  assert.equal(await bearer(), "Bearer first", "cached for a minute");
  await clock.advance(1_000);
  assert.equal(await bearer(), "Bearer second", "re-read after a minute");
});

test("exec plugin (v1 and v1beta1): env, args, cached until expirationTimestamp, re-run after a 401", async (t) => {
  const dir = tempDir(t);
  const runs = join(dir, "runs");
  // Prints a token naming its argument, env and run number, expiring at the time in ./expiry.
  const expiry = join(dir, "expiry");
  const expireAt = (ms: number): void => writeFileSync(expiry, new Date(ms).toISOString());
  write(
    dir,
    "plugin.sh",
    `#!/bin/sh
echo "$KUBERNETES_EXEC_INFO" >> "${runs}"
n=$(wc -l < "${runs}" | tr -d ' ')
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s-%s-%s","expirationTimestamp":"%s"}}' "$API" "$1" "$FLAVOUR" "$n" "$(cat "${expiry}")"
`,
  );
  chmodSync(join(dir, "plugin.sh"), 0o755);
  for (const apiVersion of ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]) {
    rmSync(runs, { force: true });
    const clock = new FakeClock();
    expireAt(clock.now() + 3_600_000);
    const config = load(
      write(
        dir,
        "config",
        doc(
          {},
          {
            exec: {
              apiVersion,
              command: "./plugin.sh",
              args: ["arg"],
              env: [
                { name: "API", value: apiVersion },
                { name: "FLAVOUR", value: "vanilla" },
              ],
              provideClusterInfo: true,
              interactiveMode: "Never",
            },
          },
        ),
      ),
      clock,
    );
    const [a, b] = await Promise.all([config.auth.credentials(), config.auth.credentials()]);
    assert.equal(a.headers.authorization, "Bearer arg-vanilla-1");
    assert.equal(b, a, "concurrent requests share one run");
    const info = JSON.parse(readFileSync(runs, "utf8").split("\n")[0] ?? "") as {
      apiVersion: string;
      kind: string;
      spec: { interactive: boolean; cluster?: { server: string } };
    };
    assert.equal(info.apiVersion, apiVersion);
    assert.equal(info.kind, "ExecCredential");
    assert.equal(info.spec.interactive, false);
    assert.equal(info.spec.cluster?.server, "https://10.0.0.1:6443");
    await clock.advance(3_599_000);
    assert.equal((await config.auth.credentials()).headers.authorization, "Bearer arg-vanilla-1", "cached");
    expireAt(clock.now() + 2 * 3_600_000);
    await clock.advance(1_000);
    const renewed = await config.auth.credentials();
    assert.equal(renewed.headers.authorization, "Bearer arg-vanilla-2", "re-run at expiry");
    config.auth.unauthorized(a);
    assert.equal(await config.auth.credentials(), renewed, "a 401 for an older credential keeps the newer");
    config.auth.unauthorized(renewed);
    assert.equal(
      (await config.auth.credentials()).headers.authorization,
      "Bearer arg-vanilla-3",
      "re-run after 401",
    );
  }
});

test("exec plugin failures and bad output name the plugin", async (t) => {
  const dir = tempDir(t);
  const plugin = (name: string, body: string): string => {
    write(dir, name, `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
    return join(dir, name);
  };
  const config = (command: string) =>
    load(
      write(
        dir,
        "config",
        doc(
          {},
          { exec: { apiVersion: "client.authentication.k8s.io/v1", command, interactiveMode: "Never" } },
        ),
      ),
    );
  const cases: [string, RegExp][] = [
    [plugin("fails.sh", "echo boom >&2; exit 3"), /exec credential plugin .*fails\.sh: .*boom/],
    [plugin("garbage.sh", "echo not json"), /garbage\.sh: output is not an ExecCredential/],
    [
      plugin(
        "wrongver.sh",
        `echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"x"}}'`,
      ),
      /want client\.authentication\.k8s\.io\/v1 ExecCredential/,
    ],
    [
      plugin(
        "empty.sh",
        `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'`,
      ),
      /neither a token nor a client certificate/,
    ],
  ];
  for (const [command, pattern] of cases)
    await assert.rejects(config(command).auth.credentials(), (error: unknown) => {
      assert.ok(error instanceof CsikitError);
      assert.match(error.message, pattern);
      return true;
    });
});

test("$KUBECONFIG lists are merged as clientcmd does: first definition and current-context win", (t) => {
  const dir = tempDir(t);
  const first = write(
    dir,
    "first",
    stringify({
      clusters: [{ name: "c", cluster: { server: "https://first:6443" } }],
      "current-context": "ctx",
    }),
  );
  const second = write(dir, "second", doc({ server: "https://second:6443" }, { token: "t" }, "ns2"));
  const config = loadKubeConfig({
    env: { KUBECONFIG: `${first}:${join(dir, "missing")}:${second}` },
    serviceAccountDir: dir,
  });
  assert.equal(config.server, "https://first:6443", "cluster c from the first file");
  assert.equal(config.namespace, "ns2", "context ctx from the second");
});

test("in-cluster: host/port, CA, namespace, and the token re-read as it rotates", async (t) => {
  const dir = tempDir(t);
  write(dir, "token", "sa-1");
  write(dir, "ca.crt", "CLUSTER-CA");
  write(dir, "namespace", "kube-system\n");
  const clock = new FakeClock();
  const config = loadKubeConfig({
    env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
    serviceAccountDir: dir,
    clock,
  });
  assert.equal(config.server, "https://10.96.0.1:443");
  assert.equal(config.namespace, "kube-system");
  assert.equal(config.tls.ca?.toString(), "CLUSTER-CA");
  assert.equal((await config.auth.credentials()).headers.authorization, "Bearer sa-1");
  write(dir, "token", "sa-2");
  await clock.advance(60_000);
  assert.equal((await config.auth.credentials()).headers.authorization, "Bearer sa-2");
  rmSync(join(dir, "token"));
  await clock.advance(60_000);
  assert.equal(
    (await config.auth.credentials()).headers.authorization,
    "Bearer sa-2",
    "kept while the file is mid-rotation",
  );
});

test("bad files get errors naming the file and field", (t) => {
  const dir = tempDir(t);
  const bad = (name: string, text: string, pattern: RegExp): void => {
    const path = write(dir, name, text);
    rejectsWith(() => load(path), pattern);
  };
  bad("yaml", "users: [{token: sekrit", /kubeconfig .*yaml is not valid YAML/);
  rejectsWith(() => load(join(dir, "yaml")), /^(?![\s\S]*sekrit)/);
  bad("scalar", "just text", /is not a YAML mapping/);
  bad("nocontext", stringify({ clusters: [] }), /has no current-context/);
  bad(
    "unknownctx",
    stringify({ "current-context": "x", contexts: [] }),
    /current-context "x" is not among its contexts/,
  );
  bad(
    "nocluster",
    stringify({ "current-context": "x", contexts: [{ name: "x", context: { cluster: "gone" } }] }),
    /context "x": cluster "gone" is not defined/,
  );
  bad(
    "server",
    doc({ server: "10.0.0.1:6443" }, {}),
    /cluster "c": server "10.0.0.1:6443" is not an http\(s\) URL/,
  );
  bad(
    "cafile",
    doc({ "certificate-authority": "nope.crt" }, {}),
    /cluster "c": certificate-authority .*nope\.crt: ENOENT/,
  );
  bad(
    "both",
    doc({ "certificate-authority": "a", "certificate-authority-data": "YQ==" }, {}),
    /certificate-authority and certificate-authority-data are both specified/,
  );
  bad(
    "insecure",
    doc({ "insecure-skip-tls-verify": "yes" }, {}),
    /insecure-skip-tls-verify must be true or false/,
  );
  bad("proxy", doc({ "proxy-url": "http://proxy:3128" }, {}), /proxy-url is not supported/);
  bad(
    "keyonly",
    doc({}, { "client-key-data": "YQ==" }),
    /user "u": client-certificate and client-key must be given together/,
  );
  bad("tokenfile", doc({}, { tokenFile: "missing-token" }), /user "u" tokenFile .*missing-token: ENOENT/);
  bad(
    "authprovider",
    doc({}, { "auth-provider": { name: "oidc" } }),
    /user "u": auth-provider is not supported/,
  );
  bad(
    "twomethods",
    doc({}, { token: "t", username: "u" }),
    /more than one of token\/tokenFile, username\/password and exec/,
  );
  bad(
    "execver",
    doc({}, { exec: { apiVersion: "v2", command: "x" } }),
    /exec: apiVersion "v2" is not one of/,
  );
  bad(
    "execcmd",
    doc({}, { exec: { apiVersion: "client.authentication.k8s.io/v1" } }),
    /exec: command is missing/,
  );
  bad("clusters", stringify({ clusters: { a: 1 } }), /clusters must be a list/);
});
