// The API server's credentials under <stateDir>/pki/: a CA, a serving certificate signed by it
// (SANs 127.0.0.1, ::1, localhost), and the admin bearer token. Generated on first start
// (ECDSA P-256 via WebCrypto and @peculiar/x509) and reused on every later start, so a
// kubeconfig written once stays valid. If any file is missing, all are regenerated together
// (a serving cert without its CA is useless). Key and token files are 0600.

import { randomBytes, type webcrypto } from "node:crypto";
import { mkdir, readFile, writeFile, rename } from "node:fs/promises";
import { join } from "node:path";
// @peculiar/x509 (through tsyringe) needs the Reflect metadata polyfill loaded first.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { isErrno } from "../base/index.ts";

export interface Credentials {
  caCertPem: string;
  serverCertPem: string;
  serverKeyPem: string;
  adminToken: string;
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

/** Loads the credentials under `pkiDir`, generating them first when any file is missing. */
export async function loadOrCreateCredentials(pkiDir: string, now: number): Promise<Credentials> {
  const existing = await readCredentials(pkiDir);
  if (existing) return existing;
  const created = await generateCredentials(now);
  await mkdir(pkiDir, { recursive: true, mode: 0o700 });
  await writeAtomic(join(pkiDir, FILES.caCert), created.caCertPem, 0o644);
  await writeAtomic(join(pkiDir, FILES.caKey), created.caKeyPem, 0o600);
  await writeAtomic(join(pkiDir, FILES.serverCert), created.serverCertPem, 0o644);
  await writeAtomic(join(pkiDir, FILES.serverKey), created.serverKeyPem, 0o600);
  await writeAtomic(join(pkiDir, FILES.token), created.adminToken + "\n", 0o600);
  return created;
}

async function readCredentials(pkiDir: string): Promise<Credentials | undefined> {
  try {
    const [caCertPem, serverCertPem, serverKeyPem, token] = await Promise.all([
      readFile(join(pkiDir, FILES.caCert), "utf8"),
      readFile(join(pkiDir, FILES.serverCert), "utf8"),
      readFile(join(pkiDir, FILES.serverKey), "utf8"),
      readFile(join(pkiDir, FILES.token), "utf8"),
    ]);
    const adminToken = token.trim();
    if (adminToken === "") return undefined;
    return { caCertPem, serverCertPem, serverKeyPem, adminToken };
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
}

/** Writes via a temp file and rename so a crash never leaves a half-written key. */
export async function writeAtomic(path: string, content: string, mode: number): Promise<void> {
  const temp = `${path}.tmp-${process.pid}`;
  await writeFile(temp, content, { mode });
  await rename(temp, path);
}

async function generateCredentials(now: number): Promise<Credentials & { caKeyPem: string }> {
  const crypto = globalThis.crypto;
  x509.cryptoProvider.set(crypto);
  const notBefore = new Date(now - 3600 * 1000);
  const notAfter = new Date(now + TEN_YEARS_MS);
  const caKeys = await crypto.subtle.generateKey(ECDSA, true, ["sign", "verify"]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: "CN=csikit-ca",
    notBefore,
    notAfter,
    signingAlgorithm: SIGNING,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const serverKeys = await crypto.subtle.generateKey(ECDSA, true, ["sign", "verify"]);
  const server = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: "CN=csikit-apiserver",
    issuer: ca.subject,
    notBefore,
    notAfter,
    signingAlgorithm: SIGNING,
    publicKey: serverKeys.publicKey,
    signingKey: caKeys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "localhost" },
        { type: "ip", value: "127.0.0.1" },
        { type: "ip", value: "::1" },
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  return {
    caCertPem: ca.toString("pem") + "\n",
    caKeyPem: await keyPem(crypto, caKeys.privateKey),
    serverCertPem: server.toString("pem") + "\n",
    serverKeyPem: await keyPem(crypto, serverKeys.privateKey),
    adminToken: randomBytes(32).toString("base64url"),
  };
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f; // a positive INTEGER
  return bytes.toString("hex");
}

async function keyPem(crypto: webcrypto.Crypto, key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await crypto.subtle.exportKey("pkcs8", key));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
}
