// Kubernetes-style quantities for byte flags (`--capacity=1Gi`, `--max-volume-size=100Mi`):
// a decimal number with an optional binary (Ki..Ei) or decimal (k, M..E) suffix, or an
// exponent (`1e9`). Results are whole bytes (fractions round up, as resource.Quantity does
// for Value()). Anything else is an error naming the text.

const SUFFIXES: Record<string, bigint> = {
  "": 1n,
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
  k: 10n ** 3n,
  M: 10n ** 6n,
  G: 10n ** 9n,
  T: 10n ** 12n,
  P: 10n ** 15n,
  E: 10n ** 18n,
};

const MAX_INT64 = (1n << 63n) - 1n;

/** Parses a quantity into bytes; throws an Error saying what is wrong. */
export function parseQuantity(text: string): bigint {
  const match = /^\+?(\d+)(?:\.(\d+))?(?:([eE][-+]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E))?$/.exec(text.trim());
  if (!match) throw new Error(`invalid quantity ${JSON.stringify(text)} (want e.g. 1Gi, 100Mi, 5G, 1024)`);
  const whole = match[1]!;
  const fraction = match[2] ?? "";
  let numerator = BigInt(whole + fraction);
  let denominator = 10n ** BigInt(fraction.length);
  if (match[3] !== undefined) {
    const exponent = Number(match[3].slice(1));
    if (Math.abs(exponent) > 30) throw new Error(`quantity ${JSON.stringify(text)} is out of range`);
    if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
    else denominator *= 10n ** BigInt(-exponent);
  } else {
    numerator *= SUFFIXES[match[4] ?? ""]!;
  }
  const bytes = (numerator + denominator - 1n) / denominator;
  if (bytes > MAX_INT64) throw new Error(`quantity ${JSON.stringify(text)} is out of range`);
  return bytes;
}
