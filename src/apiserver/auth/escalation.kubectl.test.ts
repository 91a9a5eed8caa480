// RBAC escalation prevention through the real server with real identities (static tokens) and
// the machine's kubectl (issue 24 §7b): a user who may only create RoleBindings cannot bind
// cluster-admin to herself, a user who may only create Roles cannot create `*/*/*`, each with
// kube-apiserver's 403 text; what the requester holds, the `bind` and `escalate` verbs, and
// system:masters let the write through. Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";

const skip = kubectlMissing();

const TOKENS = `eve-token,eve,uid-eve
frank-token,frank,uid-frank
mallory-token,mallory,uid-mallory
grace-token,grace,uid-grace
carl-token,carl,uid-carl
`;

/** A ClusterRole and its binding to one user, in a namespace ("" = cluster-wide). */
function grant(user: string, namespace: string, rules: string): string {
  const binding =
    namespace === ""
      ? `kind: ClusterRoleBinding\nmetadata:\n  name: ${user}`
      : `kind: RoleBinding\nmetadata:\n  name: ${user}\n  namespace: ${namespace}`;
  return `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${user}-powers
rules:
${rules}
---
apiVersion: rbac.authorization.k8s.io/v1
${binding}
subjects:
  - {kind: User, name: ${user}, apiGroup: rbac.authorization.k8s.io}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${user}-powers}
`;
}

const POLICY = [
  // eve may only create (and read) RoleBindings in default.
  grant(
    "eve",
    "default",
    `  - {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [create, get]}`,
  ),
  // frank too, and may bind cluster-admin there.
  grant(
    "frank",
    "default",
    `  - {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [create]}
  - {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [bind], resourceNames: [cluster-admin]}`,
  ),
  // mallory may only write Roles in default.
  grant(
    "mallory",
    "default",
    `  - {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [create, get, patch, update]}`,
  ),
  // grace may write Roles in default, and escalate them.
  grant(
    "grace",
    "default",
    `  - {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [create, escalate]}`,
  ),
  // carl may create ClusterRoles and ClusterRoleBindings, and read configmaps everywhere.
  grant(
    "carl",
    "",
    `  - {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles, clusterrolebindings], verbs: [create]}
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list]}`,
  ),
].join("---\n");

const NOT_HELD = (user: string) =>
  `user "${user}" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`;

describe("RBAC escalation prevention via kubectl", { skip }, () => {
  let server: TestServer;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "csikit-escalation-"));
    await writeFile(join(dir, "tokens.csv"), TOKENS, { mode: 0o600 });
    server = await startTestServer({ authorizationMode: "RBAC", tokenAuthFile: join(dir, "tokens.csv") });
    // The admin (system:masters) is exempt: it writes every role and binding, cluster-admin's too.
    const applied = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: POLICY,
    });
    assert.equal(applied.code, 0, applied.stderr);
  });
  after(async () => {
    await server?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  const as = (user: string, args: string[], stdin?: string) =>
    kubectl([`--token=${user}-token`, ...args], { kubeconfig: server.handle.kubeconfigPath, stdin });

  test("a user allowed only to create RoleBindings cannot bind cluster-admin to herself", async () => {
    const refused = await as("eve", [
      "create",
      "rolebinding",
      "eve-admin",
      "--clusterrole=cluster-admin",
      "--user=eve",
    ]);
    assert.equal(refused.code, 1);
    assert.equal(
      refused.stderr.trim(),
      `error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io "eve-admin" is forbidden: ${NOT_HELD("eve")}
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`,
    );
    const missing = await as("eve", ["get", "rolebinding", "eve-admin"]);
    assert.match(missing.stderr, /NotFound/, "nothing was stored");
    // What she holds she may grant: her own powers, to someone else.
    const within = await as("eve", [
      "create",
      "rolebinding",
      "eve-helper",
      "--clusterrole=eve-powers",
      "--user=zed",
    ]);
    assert.equal(within.code, 0, within.stderr);
    // A binding to a role that does not exist is upstream's 404.
    const ghost = await as("eve", ["create", "rolebinding", "ghost", "--role=nope", "--user=zed"]);
    assert.match(ghost.stderr, /roles\.rbac\.authorization\.k8s\.io "nope" not found/);
  });

  test("the bind verb on a role lets a user bind it without holding it", async () => {
    const bound = await as("frank", [
      "create",
      "rolebinding",
      "frank-admin",
      "--clusterrole=cluster-admin",
      "--user=zed",
    ]);
    assert.equal(bound.code, 0, bound.stderr);
    // bind is per role name: another role he does not hold stays refused.
    const other = await as("frank", [
      "create",
      "rolebinding",
      "frank-carl",
      "--clusterrole=carl-powers",
      "--user=zed",
    ]);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /is attempting to grant RBAC permissions not currently held/);
  });

  test("a user allowed to create Roles cannot create */*/*; the refusal lists only what she lacks", async () => {
    const everything = await as("mallory", ["create", "role", "everything", "--verb=*", "--resource=*.*"]);
    assert.equal(everything.code, 1);
    assert.equal(
      everything.stderr.trim(),
      `Error from server (Forbidden): roles.rbac.authorization.k8s.io "everything" is forbidden: ${NOT_HELD("mallory")}
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`,
    );
    const partly = await as("mallory", [
      "create",
      "role",
      "partly",
      "--verb=get,list,create",
      "--resource=configmaps,roles.rbac.authorization.k8s.io",
    ]);
    assert.equal(partly.code, 1);
    assert.match(
      partly.stderr,
      /not currently held:\n\{APIGroups:\[""\], Resources:\["configmaps"\], Verbs:\["get" "list" "create"\]\}\n\{APIGroups:\["rbac\.authorization\.k8s\.io"\], Resources:\["roles"\], Verbs:\["list"\]\}\s*$/,
    );
    const within = await as("mallory", ["create", "role", "maker", "--verb=create,get", "--resource=roles"]);
    assert.equal(within.code, 0, within.stderr);
  });

  test("an update is checked as a create; one that changes only finalizers or owners is not", async () => {
    const widened = await as("mallory", [
      "patch",
      "role",
      "maker",
      "--type=json",
      "-p",
      '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}}]',
    ]);
    assert.equal(widened.code, 1);
    assert.match(
      widened.stderr,
      /roles\.rbac\.authorization\.k8s\.io "maker" is forbidden: user "mallory" .*not currently held:\n\{APIGroups:\[""\], Resources:\["secrets"\], Verbs:\["get"\]\}/,
    );
    // A role the admin wrote, beyond mallory's powers: she may still add a finalizer to it.
    const admin = await kubectl(["create", "role", "big", "--verb=*", "--resource=secrets"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(admin.code, 0, admin.stderr);
    const finalizer = await as("mallory", [
      "patch",
      "role",
      "big",
      "--type=merge",
      "-p",
      '{"metadata":{"finalizers":["example.com/keep"]}}',
    ]);
    assert.equal(finalizer.code, 0, finalizer.stderr);
    const labelled = await as("mallory", [
      "patch",
      "role",
      "big",
      "--type=merge",
      "-p",
      '{"metadata":{"labels":{"a":"b"}}}',
    ]);
    assert.equal(labelled.code, 1);
    assert.match(labelled.stderr, /is attempting to grant RBAC permissions not currently held/);
    const cleared = await kubectl(
      ["patch", "role", "big", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'],
      {
        kubeconfig: server.handle.kubeconfigPath,
      },
    );
    assert.equal(cleared.code, 0, cleared.stderr);
  });

  test("the escalate verb lets a user create a role beyond what she holds", async () => {
    const everything = await as("grace", [
      "create",
      "role",
      "grace-everything",
      "--verb=*",
      "--resource=*.*",
    ]);
    assert.equal(everything.code, 0, everything.stderr);
  });

  test("cluster scope: ClusterRoles, ClusterRoleBindings and aggregation need what they grant", async () => {
    const admin = await as("carl", [
      "create",
      "clusterrolebinding",
      "carl-admin",
      "--clusterrole=cluster-admin",
      "--user=carl",
    ]);
    assert.equal(admin.code, 1);
    assert.match(
      admin.stderr,
      /clusterrolebindings\.rbac\.authorization\.k8s\.io "carl-admin" is forbidden: user "carl" .*not currently held:\n\{APIGroups:\["\*"\], Resources:\["\*"\], Verbs:\["\*"\]\}\n\{NonResourceURLs:\["\*"\], Verbs:\["\*"\]\}/,
    );
    const reader = await as("carl", [
      "create",
      "clusterrole",
      "cm-reader",
      "--verb=get",
      "--resource=configmaps",
    ]);
    assert.equal(reader.code, 0, reader.stderr);
    const aggregated = await as(
      "carl",
      ["create", "-f", "-"],
      `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gatherer}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {gather: "yes"}}]
rules: []
`,
    );
    assert.equal(aggregated.code, 1);
    assert.match(
      aggregated.stderr,
      /clusterroles\.rbac\.authorization\.k8s\.io "gatherer" is forbidden: must have cluster-admin privileges to use the aggregationRule/,
    );
  });

  test("the refusal is a 403 Status with upstream's reason and details", async () => {
    const answer = await raw(server.handle, {
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
      token: "mallory-token",
      body: JSON.stringify({
        metadata: { name: "all" },
        rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }],
      }),
    });
    assert.equal(answer.status, 403);
    const status = answer.json() as { reason?: string; details?: Record<string, unknown> };
    assert.equal(status.reason, "Forbidden");
    assert.deepEqual(status.details, { name: "all", group: "rbac.authorization.k8s.io", kind: "roles" });
  });
});
