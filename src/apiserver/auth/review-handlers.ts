// Answers to the review kinds, computed and never stored, as kube-apiserver's: SelfSubjectReview
// (who am I: `kubectl auth whoami`), SelfSubjectAccessReview (may I: `kubectl auth can-i`),
// SubjectAccessReview (may this user) and TokenReview (whose token is this: what a component's
// delegated authentication asks before it serves /metrics). Each answer echoes the request with
// its status.

import type { Authenticator, UserInfo } from "./authn.ts";
import type { Authorizer, RequestAttributes } from "./authz.ts";
import type { RestResult } from "../rest/rest.ts";
import { fieldInvalid, fieldRequired } from "../../api/index.ts";
import { badRequest, invalid } from "../transport/status.ts";
import { CsikitError } from "../../base/index.ts";

type Obj = Record<string, unknown>;

function record(value: unknown): Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Obj) : {};
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function userInfoOf(user: UserInfo): Obj {
  const info: Obj = { username: user.username, groups: [...user.groups] };
  if (user.uid !== "") info.uid = user.uid;
  if (Object.keys(user.extra).length > 0) info.extra = user.extra;
  return info;
}

function reviewBody(body: unknown, kind: string, apiVersion: string): Obj {
  const review = record(body);
  if (review.kind !== undefined && review.kind !== kind)
    throw badRequest(
      `the object provided is unrecognized (must be of type ${kind}): kind ${JSON.stringify(review.kind)}`,
    );
  const metadata = record(review.metadata);
  return { ...review, apiVersion, kind, metadata: { ...metadata, creationTimestamp: null } };
}

export function selfSubjectReview(user: UserInfo, body: unknown): RestResult {
  const review = reviewBody(body, "SelfSubjectReview", "authentication.k8s.io/v1");
  return { code: 201, body: { ...review, status: { userInfo: userInfoOf(user) } } };
}

/** The attributes a review's spec asks about, for `user`; 422 as upstream when it names neither or both. */
function attributesOf(spec: Obj, user: UserInfo, kind: string): RequestAttributes {
  const hasResource = spec.resourceAttributes !== undefined && spec.resourceAttributes !== null;
  const hasNonResource = spec.nonResourceAttributes !== undefined && spec.nonResourceAttributes !== null;
  if (hasResource === hasNonResource) {
    throw invalid("authorization.k8s.io", kind, "", [
      hasResource
        ? fieldInvalid(
            "spec.nonResourceAttributes",
            spec.nonResourceAttributes,
            "cannot be specified in combination with resourceAttributes",
          )
        : fieldRequired(
            "spec.resourceAttributes",
            "one of resourceAttributes or nonResourceAttributes must be specified",
          ),
    ]);
  }
  const resource = record(spec.resourceAttributes);
  const nonResource = record(spec.nonResourceAttributes);
  if (spec.resourceAttributes !== undefined && spec.resourceAttributes !== null) {
    return {
      user,
      verb: str(resource.verb),
      resourceRequest: true,
      path: "",
      apiGroup: str(resource.group),
      resource: str(resource.resource),
      subresource: str(resource.subresource),
      namespace: str(resource.namespace),
      name: str(resource.name),
    };
  }
  if (spec.nonResourceAttributes !== undefined && spec.nonResourceAttributes !== null) {
    return {
      user,
      verb: str(nonResource.verb),
      resourceRequest: false,
      path: str(nonResource.path),
      apiGroup: "",
      resource: "",
      subresource: "",
      namespace: "",
      name: "",
    };
  }
  throw new CsikitError("CSIKIT_ERR_INTERNAL", "unreachable: one of the attributes is set");
}

function accessStatus(authorizer: Authorizer, attributes: RequestAttributes): Obj {
  const decision = authorizer.authorize(attributes);
  return { allowed: decision.allowed, ...(decision.reason !== "" ? { reason: decision.reason } : {}) };
}

export function selfSubjectAccessReview(user: UserInfo, body: unknown, authorizer: Authorizer): RestResult {
  const review = reviewBody(body, "SelfSubjectAccessReview", "authorization.k8s.io/v1");
  const spec = record(review.spec);
  return {
    code: 201,
    body: {
      ...review,
      status: accessStatus(authorizer, attributesOf(spec, user, "SelfSubjectAccessReview")),
    },
  };
}

export function subjectAccessReview(body: unknown, authorizer: Authorizer): RestResult {
  const review = reviewBody(body, "SubjectAccessReview", "authorization.k8s.io/v1");
  const spec = record(review.spec);
  if (str(spec.user) === "" && !(Array.isArray(spec.groups) && spec.groups.length > 0))
    throw invalid("authorization.k8s.io", "SubjectAccessReview", "", [
      fieldInvalid("spec.user", "", "at least one of user or group must be specified"),
    ]);
  const extra: Record<string, string[]> = {};
  for (const [key, values] of Object.entries(record(spec.extra)))
    extra[key] = Array.isArray(values) ? values.map(String) : [];
  const subject: UserInfo = {
    username: str(spec.user),
    uid: str(spec.uid),
    groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [],
    extra,
  };
  return {
    code: 201,
    body: { ...review, status: accessStatus(authorizer, attributesOf(spec, subject, "SubjectAccessReview")) },
  };
}

/**
 * TokenReview: who the token in spec.token is. An unknown token is not an error, as upstream: the
 * answer says authenticated false. The token itself is never echoed back (the status names the
 * user only), so an answer logged by a client leaks nothing.
 */
export function tokenReview(body: unknown, authenticator: Authenticator): RestResult {
  const review = reviewBody(body, "TokenReview", "authentication.k8s.io/v1");
  const spec = record(review.spec);
  const token = str(spec.token);
  if (token === "")
    throw invalid("authentication.k8s.io", "TokenReview", "", [fieldRequired("spec.token", "")]);
  const requested = Array.isArray(spec.audiences) ? spec.audiences.map(String) : [];
  // With spec.audiences the token must be valid for one of them (status.audiences says which);
  // without, for the API server itself, as kube-apiserver's review.
  const reviewed =
    requested.length > 0
      ? authenticator.authenticateForAudiences(token, requested)
      : authenticator.authenticate(`Bearer ${token}`);
  const user = reviewed && "user" in reviewed ? reviewed.user : reviewed;
  const audiences = reviewed && "audiences" in reviewed ? reviewed.audiences : [];
  const status: Obj = user
    ? { authenticated: true, user: userInfoOf(user), ...(audiences.length > 0 ? { audiences } : {}) }
    : { authenticated: false, user: {}, error: "invalid bearer token" };
  const { token: _withheld, ...specWithoutToken } = spec;
  return { code: 201, body: { ...review, spec: specWithoutToken, status } };
}
