// A self-signed serving certificate made in memory, as kube-controller-manager and the kubelet
// make one when started without --tls-cert-file: the secure port then serves TLS at once, and a
// client that wants to verify it is given a real certificate to pin. @peculiar/x509 is loaded
// only here and only when no certificate was given, so a component started with its own
// certificate (or with no secure port) never pays for it.

export interface ServingCert {
  certPem: string;
  keyPem: string;
}

const ONE_YEAR_MS = 365 * 24 * 3600 * 1000;
const ECDSA = { name: "ECDSA", namedCurve: "P-256" } as const;

/** A self-signed ECDSA P-256 certificate for `host`, naming localhost and the loopback addresses. */
export async function selfSignedServingCert(host: string, now: number): Promise<ServingCert> {
  // @peculiar/x509 (through tsyringe) needs the Reflect metadata polyfill loaded first.
  await import("reflect-metadata");
  const x509 = await import("@peculiar/x509");
  const crypto = globalThis.crypto;
  x509.cryptoProvider.set(crypto);
  const keys = await crypto.subtle.generateKey(ECDSA, true, ["sign", "verify"]);
  const serial = new Uint8Array(16);
  crypto.getRandomValues(serial);
  serial[0] = serial[0]! & 0x7f; // a positive INTEGER
  const ips = ["127.0.0.1", "::1"];
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(serial).toString("hex"),
    // Upstream names the certificate <host>@<unix time>, so a rotated one is told apart.
    name: `CN=${host}@${Math.floor(now / 1000)}`,
    notBefore: new Date(now - 3600 * 1000),
    notAfter: new Date(now + ONE_YEAR_MS),
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "localhost" },
        ...(host !== "localhost" && !ips.includes(host) ? [{ type: "dns" as const, value: host }] : []),
        ...ips.map((ip) => ({ type: "ip" as const, value: ip })),
      ]),
    ],
  });
  const der = Buffer.from(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return {
    certPem: cert.toString("pem") + "\n",
    keyPem: `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`,
  };
}
