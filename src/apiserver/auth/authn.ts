// Authentication of API requests by bearer token (the scheme read case-insensitively, as
// upstream): the bootstrap admin token (user csikit-admin in group system:masters, which the
// authorizer always allows, like kube-apiserver's privileged group), the static tokens of a
// kube-apiserver --token-auth-file CSV (`token,user,uid,"group1,group2"`), and ServiceAccount
// tokens issued by TokenRequest (sa-tokens.ts). Every authenticated user is also in
// system:authenticated, as upstream's group adder does.

import { readFileSync } from "node:fs";
import { timingSafeEqual } from "node:crypto";
import { CsikitError } from "../../base/index.ts";

export interface UserInfo {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** A source of users by token besides the static ones (ServiceAccount tokens, sa-tokens.ts). */
export interface TokenAuthenticator {
  authenticate(token: string): UserInfo | undefined;
  /** For a TokenReview with spec.audiences: the user and the audiences the token is valid for. */
  authenticateFor?(
    token: string,
    audiences: readonly string[],
  ): { user: UserInfo; audiences: string[] } | undefined;
  /** The API server's own audiences. */
  readonly apiAudiences?: readonly string[];
}

export const ADMIN_USER = "csikit-admin";
export const MASTERS_GROUP = "system:masters";
export const AUTHENTICATED_GROUP = "system:authenticated";

/** The bearer token of an Authorization header; the scheme is case-insensitive, as upstream's. */
export function bearerToken(header: string | undefined): string | undefined {
  const parts = (header ?? "").split(" ", 3);
  if (parts.length < 2 || parts[0]!.toLowerCase() !== "bearer" || parts[1] === "") return undefined;
  return parts[1];
}

/** One CSV record, with RFC 4180 quoting as Go's encoding/csv reads it (TrimLeadingSpace). */
function csvRecords(text: string): string[][] {
  const records: string[][] = [];
  let field = "";
  let record: string[] = [];
  let quoted = false;
  let atFieldStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
      continue;
    }
    if (atFieldStart && (c === " " || c === "\t")) continue;
    if (atFieldStart && c === '"') {
      quoted = true;
      atFieldStart = false;
      continue;
    }
    if (c === ",") {
      record.push(field);
      field = "";
      atFieldStart = true;
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      if (!(record.length === 0 && field === "" && atFieldStart)) records.push([...record, field]);
      record = [];
      field = "";
      atFieldStart = true;
    } else {
      field += c;
      atFieldStart = false;
    }
  }
  if (quoted) throw new CsikitError("CSIKIT_ERR_TOKEN_FILE", 'extraneous or missing " in quoted-field');
  if (!(record.length === 0 && field === "" && atFieldStart)) records.push([...record, field]);
  return records;
}

export interface StaticToken {
  token: string;
  user: UserInfo;
}

/**
 * Parses a kube-apiserver --token-auth-file: at least 3 columns (token, user name, uid), an
 * optional 4th of comma-separated groups. Empty and duplicate tokens are skipped with a warning,
 * as upstream; a short record is an error naming the file.
 */
export function parseTokenAuthFile(
  text: string,
  path: string,
  warn: (message: string) => void = () => {},
): StaticToken[] {
  const tokens = new Map<string, StaticToken>();
  let records: string[][];
  try {
    records = csvRecords(text);
  } catch (error) {
    throw new CsikitError("CSIKIT_ERR_TOKEN_FILE", `token file '${path}': ${(error as Error).message}`, {
      cause: error,
    });
  }
  records.forEach((record, index) => {
    const recordNum = index + 1;
    if (record.length < 3)
      throw new CsikitError(
        "CSIKIT_ERR_TOKEN_FILE",
        `token file '${path}' must have at least 3 columns (token, user name, user uid), found ${record.length}`,
      );
    const [token, name, uid, groups] = record as [string, string, string, string | undefined];
    if (token === "") {
      warn(`empty token has been found in token file '${path}', record number '${recordNum}'`);
      return;
    }
    if (tokens.has(token)) {
      warn(`duplicate token has been found in token file '${path}', record number '${recordNum}'`);
    }
    const groupList = (groups ?? "")
      .split(",")
      .map((group) => group.trim())
      .filter((group) => group !== "");
    tokens.set(token, { token, user: { username: name, uid, groups: groupList, extra: {} } });
  });
  return [...tokens.values()];
}

export function loadTokenAuthFile(path: string, warn?: (message: string) => void): StaticToken[] {
  return parseTokenAuthFile(readFileSync(path, "utf8"), path, warn);
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function withAuthenticated(user: UserInfo): UserInfo {
  return user.groups.includes(AUTHENTICATED_GROUP)
    ? user
    : { ...user, groups: [...user.groups, AUTHENTICATED_GROUP] };
}

export class Authenticator {
  readonly #adminToken: string;
  readonly #staticTokens: readonly StaticToken[];
  readonly #serviceAccounts: TokenAuthenticator | undefined;

  constructor(options: {
    adminToken: string;
    staticTokens?: readonly StaticToken[];
    serviceAccounts?: TokenAuthenticator;
  }) {
    this.#adminToken = options.adminToken;
    this.#staticTokens = options.staticTokens ?? [];
    this.#serviceAccounts = options.serviceAccounts;
  }

  /** The user a request's Authorization header proves, or undefined (401). */
  authenticate(header: string | undefined): UserInfo | undefined {
    const token = bearerToken(header);
    if (token === undefined) return undefined;
    if (sameSecret(token, this.#adminToken)) {
      return { username: ADMIN_USER, uid: "", groups: [MASTERS_GROUP, AUTHENTICATED_GROUP], extra: {} };
    }
    for (const entry of this.#staticTokens)
      if (sameSecret(token, entry.token)) return withAuthenticated(entry.user);
    const account = this.#serviceAccounts?.authenticate(token);
    return account ? withAuthenticated(account) : undefined;
  }

  /**
   * A TokenReview's answer for `audiences`: as kube-apiserver, a ServiceAccount token must have
   * been issued for one of them, and the audience-unaware tokens (admin, static) authenticate
   * only when the API server's own audience is among them. Returns the user and the audiences
   * the token is valid for.
   */
  authenticateForAudiences(
    token: string,
    audiences: readonly string[],
  ): { user: UserInfo; audiences: string[] } | undefined {
    const apiAudiences = this.#serviceAccounts?.apiAudiences ?? [];
    const forApi = audiences.filter((audience) => apiAudiences.includes(audience));
    if (forApi.length > 0) {
      const user = this.authenticate(`Bearer ${token}`);
      if (user) return { user, audiences: forApi };
    }
    const account = this.#serviceAccounts?.authenticateFor?.(token, audiences);
    return account ? { user: withAuthenticated(account.user), audiences: account.audiences } : undefined;
  }
}
