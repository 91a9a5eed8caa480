// The gRPC port's TLS flags in Go's terms (--tls-min-version VersionTLS13,
// --tls-cipher-suites TLS_ECDHE_..., --tls-curve-preferences X25519,...), as
// external-snapshot-metadata's tlsconfig package accepts them, turned into Node's
// (minVersion, an OpenSSL cipher list, an ecdhCurve list). Unknown or insecure names are refused
// with upstream's messages, so a Deployment written for the upstream image means the same here.

import { FlagError } from "../../base/index.ts";
import type { TlsParameters } from "../../csi/index.ts";

const VERSIONS: Readonly<Record<string, "TLSv1.2" | "TLSv1.3">> = {
  VersionTLS12: "TLSv1.2",
  VersionTLS13: "TLSv1.3",
};

/**
 * Go's secure suites (crypto/tls CipherSuites()) by Go name → OpenSSL name. The TLS 1.3 suites
 * are accepted and, as in Go, not configurable: they map to nothing.
 */
const CIPHER_SUITES: Readonly<Record<string, string | undefined>> = {
  TLS_AES_128_GCM_SHA256: undefined,
  TLS_AES_256_GCM_SHA384: undefined,
  TLS_CHACHA20_POLY1305_SHA256: undefined,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
};

/** Go's curve names → OpenSSL group names. */
const CURVES: Readonly<Record<string, string>> = {
  X25519: "X25519",
  CurveP256: "prime256v1",
  CurveP384: "secp384r1",
  CurveP521: "secp521r1",
  X25519MLKEM768: "X25519MLKEM768",
};

function names(csv: string): string[] {
  return csv
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/** Node's TLS parameters for the three flags; "" leaves each at its default. */
export function tlsParameters(flags: {
  minVersion: string;
  cipherSuites: string;
  curvePreferences: string;
}): TlsParameters {
  const out: TlsParameters = {};
  if (flags.minVersion !== "") {
    const version = VERSIONS[flags.minVersion];
    if (!version)
      throw new FlagError(
        `unsupported TLS version ${JSON.stringify(flags.minVersion)}, must be one of: VersionTLS12, VersionTLS13`,
      );
    out.minVersion = version;
  }
  const suites: string[] = [];
  for (const name of names(flags.cipherSuites)) {
    if (!Object.hasOwn(CIPHER_SUITES, name))
      throw new FlagError(`unsupported or insecure cipher suite: ${JSON.stringify(name)}`);
    const openssl = CIPHER_SUITES[name];
    if (openssl) suites.push(openssl);
  }
  if (suites.length > 0) out.ciphers = suites.join(":");
  const curves: string[] = [];
  for (const name of names(flags.curvePreferences)) {
    const group = CURVES[name];
    if (!group)
      throw new FlagError(
        `unsupported curve ${JSON.stringify(name)}, must be one of: ${Object.keys(CURVES).sort().join(", ")}`,
      );
    curves.push(group);
  }
  if (curves.length > 0) out.ecdhCurve = curves.join(":");
  return out;
}
