// User impersonation (kube-apiserver's WithImpersonation filter): `Impersonate-User`,
// `Impersonate-Group` (repeatable), `Impersonate-Uid` and `Impersonate-Extra-<key>` headers
// make a request act as another user — what `kubectl --as / --as-group / --as-uid` sends — after
// the authenticated requester is authorized for the `impersonate` verb on each thing asked for:
// `users` (or `serviceaccounts` in the account's namespace, for system:serviceaccount:<ns>:<name>),
// `groups`, `uids` and `userextras/<key>` (both in authentication.k8s.io), as upstream checks
// them, one by one, in header order. The first denial answers 403 with upstream's message.
// The impersonated user gets system:authenticated (system:unauthenticated for
// system:anonymous); a ServiceAccount impersonated without groups gets its fixed groups.
// Groups, uid or extras without a user are refused with 400 (upstream answers 500 there).

import { AUTHENTICATED_GROUP, type UserInfo } from "./authn.ts";
import { forbiddenError, type Authorizer, type RequestAttributes } from "./authz.ts";
import { badRequest } from "../transport/status.ts";

const USER = "impersonate-user";
const GROUP = "impersonate-group";
const UID = "impersonate-uid";
const EXTRA_PREFIX = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:";
const ANONYMOUS = "system:anonymous";
const UNAUTHENTICATED_GROUP = "system:unauthenticated";
const AUTHENTICATION_GROUP = "authentication.k8s.io";

/** Each header line's value as its own entry (a group name may hold a comma): req.headersDistinct. */
export type DistinctHeaders = Partial<Record<string, string[]>>;

function values(header: string[] | undefined): string[] {
  return (header ?? []).map((value) => value.trim());
}

/** Whether a request asks to impersonate anyone (so handlers can skip all of this otherwise). */
export function wantsImpersonation(headers: DistinctHeaders): boolean {
  return Object.keys(headers).some((name) => name.startsWith("impersonate-"));
}

function check(authorizer: Authorizer, attributes: RequestAttributes): void {
  const decision = authorizer.authorize(attributes);
  if (!decision.allowed) throw forbiddenError(attributes, decision.reason);
}

/** The user the request acts as, once `requester` may impersonate everything asked for. */
export function impersonatedUser(
  requester: UserInfo,
  headers: DistinctHeaders,
  authorizer: Authorizer,
): UserInfo {
  const asked = (
    resource: string,
    name: string,
    extra: Partial<RequestAttributes> = {},
  ): RequestAttributes => ({
    user: requester,
    verb: "impersonate",
    resourceRequest: true,
    path: "",
    apiGroup: "",
    resource,
    subresource: "",
    namespace: "",
    name,
    ...extra,
  });
  const [username, ...more] = values(headers[USER]);
  const groups = values(headers[GROUP]).filter((group) => group !== "");
  const uid = values(headers[UID])[0];
  const extra: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith(EXTRA_PREFIX)) continue;
    let key: string;
    try {
      key = decodeURIComponent(name.slice(EXTRA_PREFIX.length)).toLowerCase();
    } catch {
      throw badRequest(`invalid impersonation extra header ${JSON.stringify(name)}: bad percent-encoding`);
    }
    extra[key] = values(value);
  }
  if (username === undefined || username === "") {
    throw badRequest(
      "requested impersonation of groups, a uid or extra fields without impersonating a user (set Impersonate-User)",
    );
  }
  if (more.length > 0) throw badRequest("only one Impersonate-User header may be given");

  let resultGroups = [...groups];
  if (username.startsWith(SERVICE_ACCOUNT_PREFIX)) {
    const [namespace = "", name = "", ...rest] = username.slice(SERVICE_ACCOUNT_PREFIX.length).split(":");
    if (namespace === "" || name === "" || rest.length > 0)
      throw badRequest(`invalid service account username ${JSON.stringify(username)}`);
    check(authorizer, asked("serviceaccounts", name, { namespace }));
    if (groups.length === 0) resultGroups = ["system:serviceaccounts", `system:serviceaccounts:${namespace}`];
  } else {
    check(authorizer, asked("users", username));
  }
  for (const group of groups) check(authorizer, asked("groups", group));
  for (const [key, items] of Object.entries(extra))
    for (const item of items)
      check(authorizer, asked("userextras", item, { apiGroup: AUTHENTICATION_GROUP, subresource: key }));
  if (uid !== undefined && uid !== "")
    check(authorizer, asked("uids", uid, { apiGroup: AUTHENTICATION_GROUP }));

  const implied = username === ANONYMOUS ? UNAUTHENTICATED_GROUP : AUTHENTICATED_GROUP;
  if (!resultGroups.includes(implied)) resultGroups.push(implied);
  return { username, uid: uid ?? "", groups: resultGroups, extra };
}
