// Who may read a snapshot's blocks, decided as external-snapshot-metadata decides it for every
// call: the caller's security_token is reviewed by the API server (TokenReview) for the
// service's audience (--audience, else the SnapshotMetadataService object named after the
// driver), then the user it names must be allowed to `get` volumesnapshots
// (snapshot.storage.k8s.io/v1) in the namespace asked about (SubjectAccessReview). Failures are
// upstream's statuses and messages: a token the server does not accept is UNAUTHENTICATED, a
// user without the permission PERMISSION_DENIED, a review that could not be made INTERNAL. The
// token never reaches a log line or an error.

import { GVR, type SnapshotMetadataService } from "../../api/index.ts";
import { errorMessage, type Logger } from "../../base/index.ts";
import { CsiError, GrpcStatus } from "../../csi/index.ts";
import type { KubeClient, KubeObject } from "../../kube/index.ts";

const TOKEN_REVIEWS = {
  group: "authentication.k8s.io",
  version: "v1",
  resource: "tokenreviews",
  kind: "TokenReview",
  namespaced: false,
} as const;
const SUBJECT_ACCESS_REVIEWS = {
  group: "authorization.k8s.io",
  version: "v1",
  resource: "subjectaccessreviews",
  kind: "SubjectAccessReview",
  namespaced: false,
} as const;

/** Upstream's messages (pkg/internal/server/grpc/status_msgs.go). */
export const AUTH_MESSAGES = {
  unauthenticated: "unauthenticated user",
  permissionDenied: "user does not have permissions to perform the operation",
  failedToAuthenticate: "failed to authenticate user",
  failedToAuthorize: "failed to authorize the user",
  failedToFindCR: "failed to find SnapshotMetadataService CR for driver",
} as const;

interface ReviewedUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface CallerCheckOptions {
  client: KubeClient;
  driverName: string;
  /** --audience; "" means the SnapshotMetadataService object's spec.audience. */
  audience: string;
  logger: Logger;
}

/** The audience a caller's token must carry. */
async function audienceOf(options: CallerCheckOptions, signal: AbortSignal): Promise<string> {
  if (options.audience !== "") return options.audience;
  try {
    const service = await options.client.get<SnapshotMetadataService & KubeObject>(
      GVR.snapshotMetadataServices,
      options.driverName,
      {},
      signal,
    );
    return service.spec.audience;
  } catch (error) {
    options.logger.error(AUTH_MESSAGES.failedToFindCR, {
      driver: options.driverName,
      err: errorMessage(error),
    });
    throw new CsiError(
      GrpcStatus.INTERNAL,
      `${AUTH_MESSAGES.failedToAuthenticate}: ${AUTH_MESSAGES.failedToFindCR} ${options.driverName}: ${errorMessage(error)}`,
    );
  }
}

async function authenticate(
  options: CallerCheckOptions,
  token: string,
  signal: AbortSignal,
): Promise<ReviewedUser | undefined> {
  const audience = await audienceOf(options, signal);
  let review: unknown;
  try {
    review = await options.client.create(
      TOKEN_REVIEWS,
      {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        metadata: {},
        spec: { token, audiences: [audience] },
      } as KubeObject,
      signal,
    );
  } catch (error) {
    throw new CsiError(GrpcStatus.INTERNAL, `${AUTH_MESSAGES.failedToAuthenticate}: ${errorMessage(error)}`);
  }
  const status = (
    review as { status?: { authenticated?: boolean; user?: ReviewedUser; audiences?: string[] } }
  ).status;
  if (status?.authenticated !== true || !status.user?.username) return undefined;
  // As upstream's authenticator: the review must confirm the audience asked for.
  if (!(status.audiences ?? []).includes(audience)) return undefined;
  return status.user;
}

async function authorize(
  options: CallerCheckOptions,
  user: ReviewedUser,
  namespace: string,
  signal: AbortSignal,
): Promise<{ allowed: boolean; reason: string }> {
  let review: unknown;
  try {
    review = await options.client.create(
      SUBJECT_ACCESS_REVIEWS,
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        metadata: {},
        spec: {
          resourceAttributes: {
            verb: "get",
            namespace,
            group: "snapshot.storage.k8s.io",
            version: "v1",
            resource: "volumesnapshots",
          },
          user: user.username,
          groups: user.groups ?? [],
          extra: user.extra ?? {},
          uid: user.uid ?? "",
        },
      } as KubeObject,
      signal,
    );
  } catch (error) {
    throw new CsiError(GrpcStatus.INTERNAL, `${AUTH_MESSAGES.failedToAuthorize}: ${errorMessage(error)}`);
  }
  const status = (review as { status?: { allowed?: boolean; denied?: boolean; reason?: string } }).status;
  return { allowed: status?.allowed === true && status.denied !== true, reason: status?.reason ?? "" };
}

/** Resolves when the token's user may read snapshots in `namespace`; rejects with upstream's status. */
export async function checkCaller(
  options: CallerCheckOptions,
  request: { token: string; namespace: string },
  signal: AbortSignal,
): Promise<void> {
  const user = await authenticate(options, request.token, signal);
  if (!user) {
    options.logger.error(AUTH_MESSAGES.unauthenticated, { namespace: request.namespace });
    throw new CsiError(GrpcStatus.UNAUTHENTICATED, AUTH_MESSAGES.unauthenticated);
  }
  const decision = await authorize(options, user, request.namespace, signal);
  if (!decision.allowed) {
    options.logger.error(AUTH_MESSAGES.permissionDenied, {
      user: user.username,
      namespace: request.namespace,
    });
    throw new CsiError(GrpcStatus.PERMISSION_DENIED, `${AUTH_MESSAGES.permissionDenied}: ${decision.reason}`);
  }
}
