// The review kinds: authentication.k8s.io/v1 selfsubjectreviews (`kubectl auth whoami`) and
// tokenreviews (delegated authentication of components' metrics endpoints), and
// authorization.k8s.io/v1 selfsubjectaccessreviews and subjectaccessreviews (`kubectl auth
// can-i`). Create-only and never stored: the handler answers them from the request's identity
// and the authorizer (reviews.ts beside the handler).

import type { ResourceDef } from "../rest/resource.ts";
import { NAME_COLUMN, defineResource, nameOf } from "./common.ts";

function review(group: string, resource: string, kind: string): ResourceDef {
  return defineResource({
    group,
    version: "v1",
    resource,
    kind,
    namespaced: false,
    verbs: ["create"],
    columns: [NAME_COLUMN],
    row: (object) => [nameOf(object)],
  });
}

export const selfSubjectReviews = review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview");
export const tokenReviews = review("authentication.k8s.io", "tokenreviews", "TokenReview");
export const selfSubjectAccessReviews = review(
  "authorization.k8s.io",
  "selfsubjectaccessreviews",
  "SelfSubjectAccessReview",
);
export const subjectAccessReviews = review(
  "authorization.k8s.io",
  "subjectaccessreviews",
  "SubjectAccessReview",
);

export const reviewResources: readonly ResourceDef[] = Object.freeze([
  selfSubjectReviews,
  tokenReviews,
  selfSubjectAccessReviews,
  subjectAccessReviews,
]);
