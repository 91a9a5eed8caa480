// ServiceAccount tokens as kube-apiserver issues them through TokenRequest
// (POST serviceaccounts/<name>/token, `kubectl create token`): ES256 JWTs signed with a key kept
// under <stateDir>/pki/sa.key (0600), with upstream's claims (iss, sub
// system:serviceaccount:<ns>:<name>, aud, exp/iat/nbf, jti, and kubernetes.io namespace and
// serviceaccount name/uid). A token authenticates while it is unexpired, names our issuer and
// audience, and its ServiceAccount still exists with the same uid.
// Bound tokens (spec.boundObjectRef, what the kubelet asks for a CSI driver's tokenRequests and
// projected volumes): the object — a Pod, Secret or Node of apiVersion v1 — must exist (with the
// given uid, if any); the token carries it in its `kubernetes.io` claims (a pod's node too, as
// upstream since 1.30), and stops authenticating once the object is gone or replaced. The user
// gets upstream's extra fields (authentication.kubernetes.io/pod-name, pod-uid, node-name, node-uid).

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
import { fieldInvalid } from "../../api/index.ts";
import { writeAtomic } from "../../base/index.ts";
import type { UserInfo } from "./authn.ts";
import type { KubeObject } from "../rest/resource.ts";
import type { Store } from "../storage/index.ts";
import { badRequest, invalid, notFound } from "../transport/status.ts";
import { metadataOf, stringField, timestamp } from "../rest/objects.ts";

export const DEFAULT_SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";
const DEFAULT_EXPIRATION_SECONDS = 3600;
const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;
const CREDENTIAL_ID = "authentication.kubernetes.io/credential-id";
const EXTRA_PREFIX = "authentication.kubernetes.io/";

/** Kinds a token may be bound to, with the store key of a named object of that kind. */
const BINDABLE: Readonly<Record<string, (namespace: string, name: string) => string>> = {
  Pod: (namespace, name) => `/core/pods/${namespace}/${name}`,
  Secret: (namespace, name) => `/core/secrets/${namespace}/${name}`,
  Node: (_namespace, name) => `/core/nodes//${name}`,
};

interface BoundRef {
  kind: string;
  name: string;
  uid: string;
}

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
    const bound = this.#boundObject(namespace, name, spec.boundObjectRef);
    const binding: Record<string, unknown> = {};
    if (bound) {
      binding[bound.kind.toLowerCase()] = { name: bound.name, uid: bound.uid };
      if (bound.kind === "Pod") {
        const node = this.#podNode(namespace, bound.name);
        if (node) binding.node = node;
      }
    }
    const claims = {
      aud: audiences,
      exp: now + expiration,
      iat: now,
      iss: this.#issuer,
      jti: randomUUID(),
      "kubernetes.io": { namespace, ...binding, serviceaccount: { name, uid } },
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
        spec: {
          audiences,
          expirationSeconds: expiration,
          boundObjectRef: bound
            ? { kind: bound.kind, apiVersion: "v1", name: bound.name, uid: bound.uid }
            : null,
        },
        status: {
          token: `${signingInput}.${base64url(signature)}`,
          expirationTimestamp: timestamp((now + expiration) * 1000),
        },
      },
    };
  }

  /** The object a TokenRequest binds to, checked as upstream checks it; undefined when unbound. */
  #boundObject(namespace: string, account: string, ref: unknown): BoundRef | undefined {
    if (ref === undefined || ref === null) return undefined;
    const fields = record(ref);
    const kind = typeof fields.kind === "string" ? fields.kind : "";
    const keyOf = Object.hasOwn(BINDABLE, kind) ? BINDABLE[kind] : undefined;
    const apiVersion = typeof fields.apiVersion === "string" ? fields.apiVersion : "v1";
    if (!keyOf || apiVersion !== "v1")
      throw badRequest(
        `cannot bind token for serviceaccount ${JSON.stringify(account)} to object of kind ${JSON.stringify(`${apiVersion}, Kind=${kind}`)}`,
      );
    const objectName = typeof fields.name === "string" ? fields.name : "";
    if (objectName === "")
      throw invalid("authentication.k8s.io", "TokenRequest", account, [
        fieldInvalid("spec.boundObjectRef.name", objectName, "name is required"),
      ]);
    const stored = this.#store.get(keyOf(namespace, objectName));
    const storedUid = stored ? stringField(metadataOf(stored.object), "uid") : "";
    const wantedUid = typeof fields.uid === "string" ? fields.uid : "";
    if (!stored || (wantedUid !== "" && wantedUid !== storedUid))
      throw badRequest(
        wantedUid !== "" && stored
          ? `the UID in the bound object reference (${wantedUid}) does not match the UID in record. The object might have been deleted and then recreated`
          : `${kind.toLowerCase()}s ${JSON.stringify(objectName)} not found`,
      );
    return { kind, name: objectName, uid: storedUid };
  }

  /** `{name, uid}` of the node a pod runs on, when it is scheduled and the node exists. */
  #podNode(namespace: string, pod: string): { name: string; uid: string } | undefined {
    const stored = this.#store.get(`/core/pods/${namespace}/${pod}`);
    const nodeName = stringField(record(record(stored?.object).spec), "nodeName");
    if (nodeName === "") return undefined;
    const node = this.#store.get(`/core/nodes//${nodeName}`);
    return node ? { name: nodeName, uid: stringField(metadataOf(node.object), "uid") } : undefined;
  }

  /** Whether the object a token was bound to is still the one it was bound to. */
  #stillBound(namespace: string, kind: string, claim: unknown): boolean {
    const ref = record(claim);
    const keyOf = BINDABLE[kind];
    if (!keyOf || typeof ref.name !== "string") return false;
    const stored = this.#store.get(keyOf(namespace, ref.name));
    return stored !== undefined && stringField(metadataOf(stored.object), "uid") === ref.uid;
  }

  /** The ServiceAccount user a token proves for the API server's own audience, or undefined. */
  authenticate(token: string, audiences?: readonly string[]): UserInfo | undefined {
    return this.authenticateFor(token, audiences ?? this.#audiences)?.user;
  }

  /**
   * The user a token proves for any of `audiences` (a TokenReview's spec.audiences, e.g. a
   * snapshot-metadata service's), with the audiences it was valid for, as upstream's
   * audience-aware token authenticators answer; undefined when no audience matches.
   */
  authenticateFor(
    token: string,
    audiences: readonly string[],
  ): { user: UserInfo; audiences: string[] } | undefined {
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
    const tokenAudiences = (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).map(String);
    const matched = audiences.filter((audience) => tokenAudiences.includes(audience));
    if (matched.length === 0) return undefined;
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
    const extra: Record<string, string[]> =
      typeof claims.jti === "string" ? { [CREDENTIAL_ID]: [`JTI=${claims.jti}`] } : {};
    for (const kind of ["Pod", "Secret", "Node"]) {
      const key = kind.toLowerCase();
      if (info[key] === undefined) continue;
      // A token bound to a pod that is gone (or was recreated) proves nothing any more; the
      // node of a bound pod is informational, as upstream's validator treats it.
      if (kind !== "Node" || info.pod === undefined) {
        if (!this.#stillBound(namespace, kind, info[key])) return undefined;
      }
      if (kind === "Pod" || kind === "Node") {
        const ref = record(info[key]);
        extra[`${EXTRA_PREFIX}${key}-name`] = [String(ref.name)];
        extra[`${EXTRA_PREFIX}${key}-uid`] = [String(ref.uid)];
      }
    }
    return {
      user: {
        username: `system:serviceaccount:${namespace}:${name}`,
        uid,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`],
        extra,
      },
      audiences: matched,
    };
  }

  /** The audiences the API server itself accepts (its issuer), what a review without audiences means. */
  get apiAudiences(): readonly string[] {
    return this.#audiences;
  }
}
