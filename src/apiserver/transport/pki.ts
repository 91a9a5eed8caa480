// The API server's credentials under <stateDir>/pki/: a CA, a serving certificate signed by it
// (SANs localhost, 127.0.0.1, ::1, plus any address the server is asked to listen on), and the
// admin bearer token. Generated on first start (ECDSA P-256 via WebCrypto and @peculiar/x509)
// and reused on every later start, so a kubeconfig written once stays valid. When a later
// start needs an address the serving certificate does not name, only the serving certificate
// is reissued by the same CA. If the CA or token is missing, everything is regenerated
// together. Key and token files are 0600.

import { randomBytes, X509Certificate, type webcrypto } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
// @peculiar/x509 (through tsyringe) needs the Reflect metadata polyfill loaded first.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { isErrno, writeAtomic } from "../../base/index.ts";

export interface Credentials {
  caCertPem: string;
  serverCertPem: string;
  serverKeyPem: string;
  adminToken: string;
}

export interface CredentialOptions {
  /** ms since epoch, for validity periods. */
  now: number;
  /** IP addresses the serving certificate must name besides 127.0.0.1 and ::1. */
  extraIPs?: readonly string[];
}

const FILES = {
  caCert: "ca.crt",
  caKey: "ca.key",
  serverCert: "apiserver.crt",
  serverKey: "apiserver.key",
  token: "admin.token",
} as const;

const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;
const ECDSA = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGNING = { name: "ECDSA", hash: "SHA-256" } as const;
const LOOPBACK_IPS = ["127.0.0.1", "::1"];

/** Loads the credentials under `pkiDir`, generating (or reissuing) what is missing. */
export async function loadOrCreateCredentials(
  pkiDir: string,
  options: CredentialOptions,
): Promise<Credentials> {
  const ips = [...new Set([...LOOPBACK_IPS, ...(options.extraIPs ?? []).filter((ip) => isIP(ip) !== 0)])];
  const existing = await readCredentials(pkiDir);
  if (existing) {
    const serving = new X509Certificate(existing.serverCertPem);
    if (ips.every((ip) => serving.checkIP(ip) !== undefined)) return existing;
    const caKeyPem = await readFile(join(pkiDir, FILES.caKey), "utf8");
    const reissued = await issueServingCert({
      caCertPem: existing.caCertPem,
      caKeyPem,
      ips,
      now: options.now,
    });
    await writeAtomic(join(pkiDir, FILES.serverCert), reissued.certPem, 0o644);
    await writeAtomic(join(pkiDir, FILES.serverKey), reissued.keyPem, 0o600);
    return { ...existing, serverCertPem: reissued.certPem, serverKeyPem: reissued.keyPem };
  }
  const ca = await generateCA(options.now);
  const serving = await issueServingCert({
    caCertPem: ca.certPem,
    caKeyPem: ca.keyPem,
    ips,
    now: options.now,
  });
  const adminToken = randomBytes(32).toString("base64url");
  await mkdir(pkiDir, { recursive: true, mode: 0o700 });
  await writeAtomic(join(pkiDir, FILES.caCert), ca.certPem, 0o644);
  await writeAtomic(join(pkiDir, FILES.caKey), ca.keyPem, 0o600);
  await writeAtomic(join(pkiDir, FILES.serverCert), serving.certPem, 0o644);
  await writeAtomic(join(pkiDir, FILES.serverKey), serving.keyPem, 0o600);
  await writeAtomic(join(pkiDir, FILES.token), adminToken + "\n", 0o600);
  return { caCertPem: ca.certPem, serverCertPem: serving.certPem, serverKeyPem: serving.keyPem, adminToken };
}

async function readCredentials(pkiDir: string): Promise<Credentials | undefined> {
  try {
    const [caCertPem, serverCertPem, serverKeyPem, token] = await Promise.all([
      readFile(join(pkiDir, FILES.caCert), "utf8"),
      readFile(join(pkiDir, FILES.serverCert), "utf8"),
      readFile(join(pkiDir, FILES.serverKey), "utf8"),
      readFile(join(pkiDir, FILES.token), "utf8"),
      readFile(join(pkiDir, FILES.caKey), "utf8"),
    ]);
    const adminToken = token.trim();
    if (adminToken === "") return undefined;
    return { caCertPem, serverCertPem, serverKeyPem, adminToken };
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
}

function webCrypto(): webcrypto.Crypto {
  const crypto = globalThis.crypto;
  x509.cryptoProvider.set(crypto);
  return crypto;
}

async function generateCA(now: number): Promise<{ certPem: string; keyPem: string }> {
  const crypto = webCrypto();
  const keys = await crypto.subtle.generateKey(ECDSA, true, ["sign", "verify"]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: "CN=csikit-ca",
    notBefore: new Date(now - 3600 * 1000),
    notAfter: new Date(now + TEN_YEARS_MS),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: ca.toString("pem") + "\n", keyPem: await keyPem(crypto, keys.privateKey) };
}

async function issueServingCert(input: {
  caCertPem: string;
  caKeyPem: string;
  ips: readonly string[];
  now: number;
}): Promise<{ certPem: string; keyPem: string }> {
  const crypto = webCrypto();
  const ca = new x509.X509Certificate(input.caCertPem);
  const caKey = await crypto.subtle.importKey("pkcs8", pemBody(input.caKeyPem), ECDSA, false, ["sign"]);
  const keys = await crypto.subtle.generateKey(ECDSA, true, ["sign", "verify"]);
  const server = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: "CN=csikit-apiserver",
    issuer: ca.subject,
    notBefore: new Date(input.now - 3600 * 1000),
    notAfter: new Date(input.now + TEN_YEARS_MS),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "localhost" },
        ...input.ips.map((ip) => ({ type: "ip" as const, value: ip })),
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  return { certPem: server.toString("pem") + "\n", keyPem: await keyPem(crypto, keys.privateKey) };
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f; // a positive INTEGER
  return bytes.toString("hex");
}

function pemBody(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, ""), "base64");
}

async function keyPem(crypto: webcrypto.Crypto, key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await crypto.subtle.exportKey("pkcs8", key));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
}
