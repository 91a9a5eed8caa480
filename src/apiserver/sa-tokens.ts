// ServiceAccount tokens as kube-apiserver issues them through TokenRequest
// (POST serviceaccounts/<name>/token, `kubectl create token`): ES256 JWTs signed with a key kept
// under <stateDir>/pki/sa.key (0600), with upstream's claims (iss, sub
// system:serviceaccount:<ns>:<name>, aud, exp/iat/nbf, jti, and kubernetes.io namespace and
// serviceaccount name/uid). A token authenticates while it is unexpired, names our issuer and
// audience, and its ServiceAccount still exists with the same uid.

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  sign,
  verify,
} from "node:crypto";
import type { KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fieldInvalid } from "../api/index.ts";
import type { UserInfo } from "./authn.ts";
import type { KubeObject } from "./resource.ts";
import type { Store } from "./storage/index.ts";
import { writeAtomic } from "./pki.ts";
import { invalid, notFound } from "./status.ts";
import { metadataOf, stringField, timestamp } from "./objects.ts";

export const DEFAULT_SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";
const DEFAULT_EXPIRATION_SECONDS = 3600;
const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;
const CREDENTIAL_ID = "authentication.kubernetes.io/credential-id";

function base64url(value: string | Buffer): string {
  return Buffer.from(value).toString("base64url");
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** Loads <pkiDir>/sa.key, creating it (EC P-256, PKCS#8, 0600) on first start. */
export async function loadOrCreateSigningKey(pkiDir: string): Promise<KeyObject> {
  const path = join(pkiDir, "sa.key");
  try {
    return createPrivateKey(await readFile(path, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  await writeAtomic(path, privateKey.export({ type: "pkcs8", format: "pem" }).toString(), 0o600);
  return privateKey;
}

export class ServiceAccountTokens {
  readonly #key: KeyObject;
  readonly #publicKey: KeyObject;
  readonly #keyId: string;
  readonly #issuer: string;
  readonly #audiences: readonly string[];
  readonly #store: Store;
  readonly #now: () => number;

  constructor(options: { key: KeyObject; store: Store; now: () => number; issuer?: string }) {
    this.#key = options.key;
    this.#publicKey = createPublicKey(options.key);
    // As upstream: the key id is a hash of the public key's DER form.
    this.#keyId = createHash("sha256")
      .update(this.#publicKey.export({ type: "spki", format: "der" }))
      .digest("base64url");
    this.#issuer = options.issuer ?? DEFAULT_SERVICE_ACCOUNT_ISSUER;
    this.#audiences = [this.#issuer];
    this.#store = options.store;
    this.#now = options.now;
  }

  /** Answers a TokenRequest for the ServiceAccount `namespace/name` (201 with status.token). */
  request(namespace: string, name: string, body: unknown): { code: number; body: KubeObject } {
    const account = this.#store.get(`/core/serviceaccounts/${namespace}/${name}`);
    if (!account) throw notFound("", "serviceaccounts", name);
    const spec = record(record(body).spec);
    const expiration = spec.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
    if (
      typeof expiration !== "number" ||
      !Number.isInteger(expiration) ||
      expiration < MIN_EXPIRATION_SECONDS
    ) {
      throw invalid("authentication.k8s.io", "TokenRequest", name, [
        fieldInvalid("spec.expirationSeconds", expiration, "may not specify a duration less than 10 minutes"),
      ]);
    }
    if (expiration > MAX_EXPIRATION_SECONDS) {
      throw invalid("authentication.k8s.io", "TokenRequest", name, [
        fieldInvalid(
          "spec.expirationSeconds",
          expiration,
          "may not specify a duration larger than 2^32 seconds",
        ),
      ]);
    }
    const audiences =
      Array.isArray(spec.audiences) && spec.audiences.length > 0
        ? spec.audiences.map(String)
        : [...this.#audiences];
    const now = Math.floor(this.#now() / 1000);
    const uid = stringField(metadataOf(account.object), "uid");
    const claims = {
      aud: audiences,
      exp: now + expiration,
      iat: now,
      iss: this.#issuer,
      jti: randomUUID(),
      "kubernetes.io": { namespace, serviceaccount: { name, uid } },
      nbf: now,
      sub: `system:serviceaccount:${namespace}:${name}`,
    };
    const signingInput = `${base64url(JSON.stringify({ alg: "ES256", kid: this.#keyId }))}.${base64url(JSON.stringify(claims))}`;
    const signature = sign("sha256", Buffer.from(signingInput), {
      key: this.#key,
      dsaEncoding: "ieee-p1363",
    });
    return {
      code: 201,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        metadata: { name, namespace, creationTimestamp: null },
        spec: { audiences, expirationSeconds: expiration, boundObjectRef: null },
        status: {
          token: `${signingInput}.${base64url(signature)}`,
          expirationTimestamp: timestamp((now + expiration) * 1000),
        },
      },
    };
  }

  /** The ServiceAccount user a token proves, or undefined. */
  authenticate(token: string): UserInfo | undefined {
    const parts = token.split(".");
    if (parts.length !== 3) return undefined;
    const [header, payload, signature] = parts as [string, string, string];
    let claims: Record<string, unknown>;
    try {
      if (record(JSON.parse(Buffer.from(header, "base64url").toString("utf8"))).alg !== "ES256")
        return undefined;
      const valid = verify(
        "sha256",
        Buffer.from(`${header}.${payload}`),
        { key: this.#publicKey, dsaEncoding: "ieee-p1363" },
        Buffer.from(signature, "base64url"),
      );
      if (!valid) return undefined;
      claims = record(JSON.parse(Buffer.from(payload, "base64url").toString("utf8")));
    } catch {
      return undefined;
    }
    const now = Math.floor(this.#now() / 1000);
    if (claims.iss !== this.#issuer) return undefined;
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audiences.some((aud) => this.#audiences.includes(String(aud)))) return undefined;
    // Upstream allows a minute of clock skew on both ends.
    if (typeof claims.exp !== "number" || claims.exp + 60 < now) return undefined;
    if (typeof claims.nbf === "number" && claims.nbf - 60 > now) return undefined;
    const info = record(claims["kubernetes.io"]);
    const namespace = typeof info.namespace === "string" ? info.namespace : "";
    const account = record(info.serviceaccount);
    const name = typeof account.name === "string" ? account.name : "";
    if (namespace === "" || name === "") return undefined;
    const stored = this.#store.get(`/core/serviceaccounts/${namespace}/${name}`);
    if (!stored) return undefined;
    const uid = stringField(metadataOf(stored.object), "uid");
    if (uid !== account.uid) return undefined;
    return {
      username: `system:serviceaccount:${namespace}:${name}`,
      uid,
      groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`],
      extra: typeof claims.jti === "string" ? { [CREDENTIAL_ID]: [`JTI=${claims.jti}`] } : {},
    };
  }
}
