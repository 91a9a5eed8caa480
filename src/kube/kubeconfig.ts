// Client configuration the way client-go's clientcmd and rest.InClusterConfig build it, without
// @kubernetes/client-node (loading it costs every process ~0.65 s CPU and ~1000 modules for
// what is a YAML file and a few credentials).
//
// `loadKubeConfig`: an explicit --kubeconfig wins (it must exist); else the in-cluster service
// account (KUBERNETES_SERVICE_HOST/PORT + /var/run/secrets/kubernetes.io/serviceaccount); else
// $KUBECONFIG, whose existing files are merged as clientcmd merges them (the first file to
// define a name or current-context wins), or ~/.kube/config. --master replaces the server URL
// of whatever was loaded (or is used alone when nothing was found).
//
// Honoured kubeconfig fields: current-context, context cluster/user/namespace; cluster server,
// certificate-authority(-data), insecure-skip-tls-verify, tls-server-name; user token,
// tokenFile (re-read every minute, as client-go's cached file token source does), client-
// certificate(-data), client-key(-data), username/password, as/as-groups (impersonation), exec
// credential plugins (client.authentication.k8s.io v1 and v1beta1: cached until
// expirationTimestamp, re-run after a 401). Relative file paths (and an exec command containing
// a "/") resolve against the directory of the kubeconfig file that named them. proxy-url and
// auth-provider are refused with an error naming them rather than silently bypassed.

import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { CsikitError, realClock, type Clock } from "../base/index.ts";

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** client-go re-reads bearer token files (bound service-account tokens rotate) this often. */
const TOKEN_FILE_PERIOD_MS = 60_000;
const EXEC_API_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"];

/** TLS settings of the connection pool (node:https / tls option names). */
export interface TlsSettings {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

/** What one request carries: headers and, from an exec plugin, a client certificate. */
export interface Credentials {
  /** An array value is sent as repeated header lines (Impersonate-Group, as client-go sends it). */
  headers: Record<string, string | string[]>;
  cert?: Buffer;
  key?: Buffer;
}

/** A source of credentials; `unauthorized` tells it the server rejected what it gave (401). */
export interface Authenticator {
  credentials(): Promise<Credentials>;
  unauthorized(used: Credentials): void;
}

/** The resolved configuration of one client (client-go's rest.Config). */
export interface ClientConfig {
  /** Server URL without a trailing slash. */
  server: string;
  /** The context's namespace, "" when none. */
  namespace: string;
  tls: TlsSettings;
  auth: Authenticator;
  /** Where it came from, for error messages ("kubeconfig /x (context c)", "in-cluster"). */
  source: string;
}

export interface LoadKubeConfigOptions {
  /** --kubeconfig path; "" or absent = not given. */
  kubeconfig?: string;
  /** --master URL override; "" or absent = not given. */
  master?: string;
  /** For tests: environment, service-account directory, home and clock. */
  env?: NodeJS.ProcessEnv;
  serviceAccountDir?: string;
  homeDir?: string;
  clock?: Clock;
}

const fail = (message: string): never => {
  throw new CsikitError("CSIKIT_ERR_KUBECONFIG", message);
};

/** Loads client configuration as the sidecars do; throws a CsikitError naming what was tried. */
export function loadKubeConfig(options: LoadKubeConfigOptions = {}): ClientConfig {
  const env = options.env ?? process.env;
  const clock = options.clock ?? realClock;
  const master = (options.master ?? "").replace(/\/+$/, "");
  const tried: string[] = [];
  let config: ClientConfig | undefined;
  if (options.kubeconfig) {
    if (!existsSync(options.kubeconfig)) fail(`flag -kubeconfig: file ${options.kubeconfig} does not exist`);
    config = fromFiles([options.kubeconfig], "-kubeconfig", env, clock, master);
  } else {
    const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT;
    const tokenPath = join(saDir, "token");
    if (host && port && existsSync(tokenPath)) {
      config = inClusterConfig(saDir, host, port, clock);
    } else {
      tried.push(
        `in-cluster service account (KUBERNETES_SERVICE_HOST/PORT ${host && port ? "set" : "unset"}, ${tokenPath} ${existsSync(tokenPath) ? "present" : "missing"})`,
      );
      const candidates = env.KUBECONFIG
        ? env.KUBECONFIG.split(delimiter).filter((p) => p !== "")
        : [join(options.homeDir ?? homedir(), ".kube", "config")];
      const found = candidates.filter((path) => existsSync(path));
      if (found.length > 0)
        config = fromFiles(found, env.KUBECONFIG ? "$KUBECONFIG" : "~/.kube/config", env, clock, master);
      else tried.push(...candidates.map((path) => `kubeconfig ${path} (missing)`));
    }
  }
  if (master) {
    if (config) return { ...config, server: master };
    return {
      server: master,
      namespace: "",
      tls: {},
      auth: staticAuth({}),
      source: "-master",
    };
  }
  if (!config)
    return fail(`no Kubernetes client configuration: give -kubeconfig or -master; tried ${tried.join("; ")}`);
  return config;
}

/** The namespace the process runs in: POD_NAMESPACE, the service-account file, else "default". */
export function podNamespace(env: NodeJS.ProcessEnv = process.env, saDir = SERVICE_ACCOUNT_DIR): string {
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  try {
    const text = readFileSync(join(saDir, "namespace"), "utf8").trim();
    if (text) return text;
  } catch {
    // Not in a pod.
  }
  return "default";
}

/** rest.InClusterConfig: the service host/port, the rotating token file and the CA bundle. */
function inClusterConfig(saDir: string, host: string, port: string, clock: Clock): ClientConfig {
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const namespaceFile = join(saDir, "namespace");
  const caFile = join(saDir, "ca.crt");
  return {
    server,
    namespace: existsSync(namespaceFile) ? readFileSync(namespaceFile, "utf8").trim() : "",
    tls: existsSync(caFile) ? { ca: readFileSync(caFile) } : {},
    auth: tokenFileAuth(join(saDir, "token"), "in-cluster service account token", clock, {}),
    source: "in-cluster service account",
  };
}

// ---- kubeconfig files ----

type Fields = Record<string, unknown>;
interface Named {
  /** The object under cluster/user/context. */
  value: Fields;
  /** Directory of the file that defined it, for relative paths. */
  dir: string;
  file: string;
}

function fromFiles(
  paths: string[],
  source: string,
  env: NodeJS.ProcessEnv,
  clock: Clock,
  master: string,
): ClientConfig {
  const clusters = new Map<string, Named>();
  const users = new Map<string, Named>();
  const contexts = new Map<string, Named>();
  let currentContext = "";
  let currentFile = "";
  for (const path of paths) {
    const document = readDocument(path, source);
    const dir = dirname(resolve(path));
    collect(document, "clusters", "cluster", clusters, path, dir);
    collect(document, "users", "user", users, path, dir);
    collect(document, "contexts", "context", contexts, path, dir);
    const current = document["current-context"];
    if (current !== undefined && typeof current !== "string")
      fail(`${source}: kubeconfig ${path}: current-context must be a string`);
    if (!currentContext && typeof current === "string" && current) {
      currentContext = current;
      currentFile = path;
    }
  }
  const files = paths.join(delimiter);
  if (!currentContext) return fail(`${source}: kubeconfig ${files} has no current-context`);
  const context = contexts.get(currentContext);
  if (!context)
    return fail(
      `${source}: kubeconfig ${currentFile}: current-context "${currentContext}" is not among its contexts`,
    );
  const where = `${source}: kubeconfig ${context.file} context "${currentContext}"`;
  const clusterName = optionalString(context.value, "cluster", where);
  const userName = optionalString(context.value, "user", where);
  const cluster = clusters.get(clusterName);
  if (!cluster) return fail(`${where}: cluster "${clusterName}" is not defined`);
  const user = userName === "" ? undefined : users.get(userName);
  if (userName !== "" && !user) return fail(`${where}: user "${userName}" is not defined`);
  const clusterWhere = `${source}: kubeconfig ${cluster.file} cluster "${clusterName}"`;
  const server = optionalString(cluster.value, "server", clusterWhere).replace(/\/+$/, "");
  if (!server && !master) fail(`${clusterWhere}: server is empty`);
  if (server && !/^https?:\/\//.test(server))
    fail(`${clusterWhere}: server ${JSON.stringify(server)} is not an http(s) URL`);
  if (optionalString(cluster.value, "proxy-url", clusterWhere))
    fail(`${clusterWhere}: proxy-url is not supported by csikit's client; remove it or use a direct address`);
  const tls: TlsSettings = {};
  const ca = fileOrData(cluster, "certificate-authority", "certificate-authority-data", clusterWhere);
  if (ca) tls.ca = ca;
  const insecure = cluster.value["insecure-skip-tls-verify"];
  if (insecure !== undefined && typeof insecure !== "boolean")
    fail(`${clusterWhere}: insecure-skip-tls-verify must be true or false`);
  if (insecure === true) {
    if (ca) fail(`${clusterWhere}: certificate-authority and insecure-skip-tls-verify cannot both be set`);
    tls.rejectUnauthorized = false;
  }
  const serverName = optionalString(cluster.value, "tls-server-name", clusterWhere);
  if (serverName) tls.servername = serverName;
  const userWhere = `${source}: kubeconfig ${user?.file ?? ""} user "${userName}"`;
  const auth = user ? userAuth(user, userWhere, server || master, tls, env, clock) : staticAuth({});
  if (user) {
    const cert = fileOrData(user, "client-certificate", "client-certificate-data", userWhere);
    const key = fileOrData(user, "client-key", "client-key-data", userWhere);
    if (Boolean(cert) !== Boolean(key))
      fail(`${userWhere}: client-certificate and client-key must be given together`);
    if (cert) tls.cert = cert;
    if (key) tls.key = key;
  }
  return {
    server,
    namespace: optionalString(context.value, "namespace", where),
    tls,
    auth,
    source: `kubeconfig ${context.file} (context ${currentContext})`,
  };
}

function readDocument(path: string, source: string): Fields {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    return fail(`${source}: cannot read kubeconfig ${path}: ${(error as Error).message}`);
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    // First line only: the parser's code frame would quote the file, which may hold a token.
    const reason = (error as Error).message.split("\n")[0] ?? "";
    return fail(`${source}: kubeconfig ${path} is not valid YAML: ${reason}`);
  }
  if (document === null || document === undefined) return {};
  if (typeof document !== "object" || Array.isArray(document))
    return fail(`${source}: kubeconfig ${path} is not a YAML mapping`);
  return document as Fields;
}

/** Adds `list`'s named entries to `into`; the first file to define a name wins (clientcmd). */
function collect(
  document: Fields,
  list: string,
  field: string,
  into: Map<string, Named>,
  file: string,
  dir: string,
): void {
  const entries = document[list];
  if (entries === undefined || entries === null) return;
  if (!Array.isArray(entries)) fail(`kubeconfig ${file}: ${list} must be a list`);
  for (const [index, entry] of (entries as unknown[]).entries()) {
    const where = `kubeconfig ${file}: ${list}[${index}]`;
    if (typeof entry !== "object" || entry === null) fail(`${where} must be a mapping`);
    const { name, [field]: value } = entry as Fields;
    if (typeof name !== "string" || name === "") fail(`${where}: name is missing`);
    if (value !== undefined && value !== null && (typeof value !== "object" || Array.isArray(value)))
      fail(`${where}: ${field} must be a mapping`);
    if (!into.has(name as string)) into.set(name as string, { value: (value ?? {}) as Fields, dir, file });
  }
}

function optionalString(fields: Fields, key: string, where: string): string {
  const value = fields[key];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") return fail(`${where}: ${key} must be a string`);
  return value;
}

/** `<field>` names a file (relative to the kubeconfig's directory), `<field>-data` is base64. */
function fileOrData(named: Named, fileKey: string, dataKey: string, where: string): Buffer | undefined {
  const file = optionalString(named.value, fileKey, where);
  const data = optionalString(named.value, dataKey, where);
  if (file && data) fail(`${where}: ${fileKey} and ${dataKey} are both specified`);
  if (data) {
    const bytes = Buffer.from(data, "base64");
    if (bytes.length === 0) fail(`${where}: ${dataKey} is not valid base64`);
    return bytes;
  }
  if (!file) return undefined;
  const path = isAbsolute(file) ? file : join(named.dir, file);
  try {
    return readFileSync(path);
  } catch (error) {
    return fail(`${where}: ${fileKey} ${path}: ${(error as Error).message}`);
  }
}

function userAuth(
  user: Named,
  where: string,
  server: string,
  tls: TlsSettings,
  env: NodeJS.ProcessEnv,
  clock: Clock,
): Authenticator {
  const fields = user.value;
  if (fields["auth-provider"] !== undefined && fields["auth-provider"] !== null)
    fail(`${where}: auth-provider is not supported (deprecated upstream); use an exec credential plugin`);
  const extra: Record<string, string | string[]> = {};
  const as = optionalString(fields, "as", where);
  if (as) extra["impersonate-user"] = as;
  const groups = fields["as-groups"];
  if (groups !== undefined && groups !== null) {
    if (!Array.isArray(groups) || groups.some((g) => typeof g !== "string"))
      fail(`${where}: as-groups must be a list of strings`);
    // One header line per group: the API server does not split a comma-joined value.
    if ((groups as string[]).length > 0) extra["impersonate-group"] = groups as string[];
  }
  const token = optionalString(fields, "token", where);
  const tokenFile = optionalString(fields, "tokenFile", where);
  const username = optionalString(fields, "username", where);
  const password = optionalString(fields, "password", where);
  const exec = fields.exec;
  const methods = [
    token || tokenFile ? "token" : "",
    username || password ? "basic" : "",
    exec ? "exec" : "",
  ];
  if (methods.filter((m) => m !== "").length > 1)
    fail(`${where}: more than one of token/tokenFile, username/password and exec is set`);
  if (tokenFile)
    return tokenFileAuth(
      isAbsolute(tokenFile) ? tokenFile : join(user.dir, tokenFile),
      `${where} tokenFile`,
      clock,
      extra,
    );
  if (token) return staticAuth({ ...extra, authorization: `Bearer ${token}` });
  if (username || password)
    return staticAuth({
      ...extra,
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`,
    });
  if (exec) return execAuth(parseExec(exec, user.dir, where), server, tls, env, clock, extra);
  return staticAuth(extra);
}

function staticAuth(headers: Record<string, string | string[]>): Authenticator {
  const credentials = { headers };
  return {
    credentials: () => Promise.resolve(credentials),
    unauthorized: () => {},
  };
}

/** A bearer token read from a file now (errors surface at load) and again once a minute. */
function tokenFileAuth(
  path: string,
  what: string,
  clock: Clock,
  extra: Record<string, string | string[]>,
): Authenticator {
  const read = (): string => {
    try {
      const token = readFileSync(path, "utf8").trim();
      if (!token) return fail(`${what} ${path} is empty`);
      return token;
    } catch (error) {
      if (error instanceof CsikitError) throw error;
      return fail(`${what} ${path}: ${(error as Error).message}`);
    }
  };
  let token = read();
  let readAt = clock.now();
  return {
    credentials: () => {
      if (clock.now() - readAt >= TOKEN_FILE_PERIOD_MS) {
        try {
          token = read();
        } catch {
          // client-go keeps the cached token when a re-read fails (the file is mid-rotation).
        }
        readAt = clock.now();
      }
      return Promise.resolve({ headers: { ...extra, authorization: `Bearer ${token}` } });
    },
    unauthorized: () => {
      readAt = -Infinity;
    },
  };
}

// ---- exec credential plugins ----

export interface ExecConfig {
  apiVersion: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  provideClusterInfo: boolean;
  interactiveMode: string;
}

function parseExec(raw: unknown, dir: string, where: string): ExecConfig {
  const at = `${where} exec`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return fail(`${at} must be a mapping`);
  const fields = raw as Fields;
  const apiVersion = optionalString(fields, "apiVersion", at);
  if (!EXEC_API_VERSIONS.includes(apiVersion))
    fail(`${at}: apiVersion ${JSON.stringify(apiVersion)} is not one of ${EXEC_API_VERSIONS.join(", ")}`);
  let command = optionalString(fields, "command", at);
  if (!command) fail(`${at}: command is missing`);
  // clientcmd resolves a command with a path separator against the kubeconfig's directory;
  // a bare name is looked up in $PATH.
  if (command.includes("/") && !isAbsolute(command)) command = join(dir, command);
  const args = fields.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string"))
    fail(`${at}: args must be a list of strings`);
  const envList = fields.env ?? [];
  if (!Array.isArray(envList)) fail(`${at}: env must be a list of {name, value}`);
  const env: Record<string, string> = {};
  for (const entry of envList as unknown[]) {
    const { name, value } = (entry ?? {}) as Fields;
    if (typeof name !== "string" || !name || typeof value !== "string")
      fail(`${at}: env entries need a name and a string value`);
    env[name as string] = value as string;
  }
  // As clientcmd: v1 must say how the plugin uses stdin; v1beta1 defaults to IfAvailable.
  const interactiveMode = optionalString(fields, "interactiveMode", at);
  if (!interactiveMode && apiVersion === "client.authentication.k8s.io/v1")
    fail(`${at}: interactiveMode must be specified for ${apiVersion}`);
  if (interactiveMode && !["Never", "IfAvailable", "Always"].includes(interactiveMode))
    fail(`${at}: interactiveMode ${JSON.stringify(interactiveMode)} is not Never, IfAvailable or Always`);
  if (interactiveMode === "Always")
    fail(`${at}: interactiveMode Always needs a terminal, which csikit components never have`);
  return {
    apiVersion,
    command,
    args: args as string[],
    env,
    provideClusterInfo: fields.provideClusterInfo === true,
    interactiveMode: interactiveMode || "IfAvailable",
  };
}

/**
 * Runs the plugin when there is no credential, when its expirationTimestamp has passed, or
 * after the server answered 401 to the credential it gave; concurrent requests share one run.
 */
function execAuth(
  config: ExecConfig,
  server: string,
  tls: TlsSettings,
  env: NodeJS.ProcessEnv,
  clock: Clock,
  extra: Record<string, string | string[]>,
): Authenticator {
  let cached: { credentials: Credentials; expiresAt: number } | undefined;
  let running: Promise<Credentials> | undefined;
  const run = async (): Promise<Credentials> => {
    const spec: Fields = { interactive: false };
    if (config.provideClusterInfo)
      spec.cluster = {
        server,
        ...(tls.servername ? { "tls-server-name": tls.servername } : {}),
        ...(tls.rejectUnauthorized === false ? { "insecure-skip-tls-verify": true } : {}),
        ...(tls.ca ? { "certificate-authority-data": tls.ca.toString("base64") } : {}),
      };
    const info = JSON.stringify({ apiVersion: config.apiVersion, kind: "ExecCredential", spec });
    const stdout = await new Promise<string>((resolveRun, reject) => {
      execFile(
        config.command,
        config.args,
        {
          env: { ...env, ...config.env, KUBERNETES_EXEC_INFO: info },
          timeout: 60_000,
          maxBuffer: 4 * 1024 * 1024,
        },
        (error, out, stderr) => {
          if (error)
            reject(
              new CsikitError(
                "CSIKIT_ERR_KUBECONFIG",
                `exec credential plugin ${config.command}: ${error.message.split("\n")[0] ?? ""}${stderr ? `: ${stderr.trim().slice(0, 300)}` : ""}`,
                { cause: error },
              ),
            );
          else resolveRun(out);
        },
      );
    });
    const credentials = parseExecOutput(stdout, config, extra);
    const expiry = credentials.expirationTimestamp;
    cached = { credentials: credentials.credentials, expiresAt: expiry ? Date.parse(expiry) : Infinity };
    return credentials.credentials;
  };
  return {
    credentials: () => {
      if (cached && clock.now() < cached.expiresAt) return Promise.resolve(cached.credentials);
      running ??= run().finally(() => {
        running = undefined;
      });
      return running;
    },
    unauthorized: (used) => {
      // Only the credential that was rejected is dropped: a newer one may already be cached.
      if (cached?.credentials === used) cached = undefined;
    },
  };
}

function parseExecOutput(
  stdout: string,
  config: ExecConfig,
  extra: Record<string, string | string[]>,
): { credentials: Credentials; expirationTimestamp: string } {
  const what = `exec credential plugin ${config.command}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch {
    return fail(`${what}: output is not an ExecCredential JSON object`);
  }
  const object = (parsed ?? {}) as Fields;
  if (object.kind !== "ExecCredential" || object.apiVersion !== config.apiVersion)
    fail(
      `${what}: output has apiVersion ${JSON.stringify(object.apiVersion)} kind ${JSON.stringify(object.kind)}, want ${config.apiVersion} ExecCredential`,
    );
  const status = object.status;
  if (typeof status !== "object" || status === null) return fail(`${what}: output has no status`);
  const fields = status as Fields;
  const token = optionalString(fields, "token", what);
  const cert = optionalString(fields, "clientCertificateData", what);
  const key = optionalString(fields, "clientKeyData", what);
  const expirationTimestamp = optionalString(fields, "expirationTimestamp", what);
  if (expirationTimestamp && Number.isNaN(Date.parse(expirationTimestamp)))
    fail(`${what}: status.expirationTimestamp ${JSON.stringify(expirationTimestamp)} is not a timestamp`);
  if (Boolean(cert) !== Boolean(key))
    fail(`${what}: status.clientCertificateData and clientKeyData must be given together`);
  if (!token && !cert) fail(`${what}: status has neither a token nor a client certificate`);
  const credentials: Credentials = {
    headers: { ...extra, ...(token ? { authorization: `Bearer ${token}` } : {}) },
  };
  if (cert) {
    credentials.cert = Buffer.from(cert);
    credentials.key = Buffer.from(key);
  }
  return { credentials, expirationTimestamp };
}
