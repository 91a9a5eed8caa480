// resource.Quantity: exact parse, canonical format and comparison, as apimachinery does it.
// A quantity is held as an exact bigint count of nano-units (10^-9), which is the finest
// precision upstream keeps (finer values round up, away from zero, as upstream's RoundUp).
// The format (DecimalSI "1k", BinarySI "1Ki", DecimalExponent "1e3") is remembered from the
// input and drives the canonical output, e.g. "1.5Gi" → "1536Mi", "0.5" → "500m", "1000" → "1k".

import { ValidationError } from "./errors.ts";

export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

export interface Quantity {
  /** Value × 10^9, exact. */
  readonly nanos: bigint;
  readonly format: QuantityFormat;
}

const NANO = 1_000_000_000n;
const MAX_INT64 = (1n << 63n) - 1n;
const QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";
const ERR_FORMAT = `quantities must match the regular expression '${QUANTITY_REGEX}'`;
const ERR_NUMERIC = "unable to parse numeric part of quantity";
const ERR_SUFFIX = "unable to parse quantity's suffix";
const MAX_QUANTITY_LENGTH = 1024;

const BINARY_SUFFIXES: Readonly<Record<string, number>> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL_SUFFIXES: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const DECIMAL_BY_EXPONENT = new Map(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const BINARY_BY_POWER = new Map(Object.entries(BINARY_SUFFIXES).map(([s, p]) => [p, s]));

function pow10(exponent: number): bigint {
  return 10n ** BigInt(exponent);
}

/** Divides rounding away from zero when inexact (upstream rounds sub-nano values up). */
function divRoundUp(numerator: bigint, denominator: bigint): bigint {
  const quotient = numerator / denominator;
  if (quotient * denominator === numerator) return quotient;
  return numerator < 0n ? quotient - 1n : quotient + 1n;
}

/** Exponents up to this are computed exactly (10^n with n digits stays cheap). */
const MAX_EXACT_EXPONENT = 1000;
/** Below minus this, every quantity of at most MAX_QUANTITY_LENGTH digits is under one nano. */
const MAX_EXACT_NEGATIVE_EXPONENT = MAX_QUANTITY_LENGTH + 10;

/**
 * The exponent of an "e<n>" suffix as upstream reads it: strconv.ParseInt(n, 10, 64) (beyond
 * int64 the suffix does not parse), then kept as an int32 (wrapping, as Go's conversion does).
 * Values beyond 10^1000 are refused: upstream keeps them as a scaled decimal, csikit holds
 * quantities as exact nano-unit counts, and no real quantity needs them.
 */
function suffixExponent(suffix: string): number {
  const match = /^[eE]([-+]?[0-9]+)$/.exec(suffix);
  if (match === null) throw new ValidationError(ERR_SUFFIX);
  const parsed = BigInt(match[1] ?? "0");
  if (parsed > MAX_INT64 || parsed < -MAX_INT64 - 1n) throw new ValidationError(ERR_SUFFIX);
  const exponent = Number(BigInt.asIntN(32, parsed));
  if (exponent > MAX_EXACT_EXPONENT) throw new ValidationError(ERR_NUMERIC);
  return exponent;
}

/**
 * Parses "1Gi", "100Mi", "1.5G", "500m", "1e3", "-2", ".5" exactly; throws ValidationError
 * carrying upstream's message (callers prefix the field and value).
 */
export function parseQuantity(input: string): Quantity {
  const text = input.trim();
  // The numeric part and the suffix are checked separately below: the upstream regex as a
  // whole backtracks quadratically on long hostile input.
  if (text === "" || text !== input || !/^[+-]?[0-9.]/.test(text)) throw new ValidationError(ERR_FORMAT);
  // No real quantity is this long; refusing early keeps hostile input cheap (bigint parsing
  // of millions of digits).
  if (text.length > MAX_QUANTITY_LENGTH) throw new ValidationError(ERR_NUMERIC);
  const match = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$/.exec(text);
  if (match === null) throw new ValidationError(ERR_FORMAT);
  const sign = match[1] === "-" ? -1n : 1n;
  const whole = match[2] ?? "";
  const fraction = match[3] ?? "";
  const suffix = match[4] ?? "";
  if (whole === "" && fraction === "") throw new ValidationError(ERR_NUMERIC);
  if (!/^[eEinumkKMGTP]*[-+]?[0-9]*$/.test(suffix)) {
    throw new ValidationError(ERR_FORMAT);
  }
  // value = digits × 10^-fraction.length × multiplier
  const digits = BigInt((whole === "" ? "0" : whole) + fraction);
  const fractionDigits = fraction.length;
  let numerator: bigint;
  let denominator = pow10(fractionDigits);
  let format: QuantityFormat;
  const binaryPower = BINARY_SUFFIXES[suffix];
  const decimalExponent = DECIMAL_SUFFIXES[suffix];
  if (binaryPower !== undefined) {
    format = "BinarySI";
    numerator = digits * 1024n ** BigInt(binaryPower);
  } else if (decimalExponent !== undefined) {
    format = "DecimalSI";
    numerator = digits;
    if (decimalExponent >= 0) numerator *= pow10(decimalExponent);
    else denominator *= pow10(-decimalExponent);
  } else {
    const exponent = suffixExponent(suffix);
    format = "DecimalExponent";
    numerator = digits;
    if (exponent < -MAX_EXACT_NEGATIVE_EXPONENT) {
      // Far below a nano-unit even with every digit whole: upstream rounds any non-zero value
      // up to one nano-unit, so no 10^n needs building.
      const nanos = digits === 0n ? 0n : sign;
      return Object.freeze({ nanos, format });
    }
    if (exponent >= 0) numerator *= pow10(exponent);
    else denominator *= pow10(-exponent);
  }
  const nanos = sign * divRoundUp(numerator * NANO, denominator);
  return Object.freeze({ nanos: nanos === 0n ? 0n : nanos, format });
}

/** parseQuantity that returns undefined instead of throwing. */
export function tryParseQuantity(input: unknown): Quantity | undefined {
  if (typeof input === "number" && Number.isFinite(input)) input = String(input);
  if (typeof input !== "string") return undefined;
  try {
    return parseQuantity(input);
  } catch {
    return undefined;
  }
}

/** The canonical string, as the API server writes quantities back. */
export function formatQuantity(quantity: Quantity): string {
  const { nanos } = quantity;
  if (nanos === 0n) return "0";
  let format = quantity.format;
  if (format === "BinarySI") {
    // Small or fractional binary values print in decimal, which avoids rounding.
    if ((nanos > -1024n * NANO && nanos < 1024n * NANO) || nanos % NANO !== 0n) format = "DecimalSI";
  }
  if (format === "BinarySI") {
    let mantissa = nanos / NANO;
    let power = 0;
    while (power < 6 && mantissa % 1024n === 0n) {
      mantissa /= 1024n;
      power++;
    }
    return `${mantissa}${BINARY_BY_POWER.get(power) ?? ""}`;
  }
  let mantissa = nanos;
  let exponent = -9;
  // DecimalSI stops at its largest suffix (E); an exponent has no such bound ("10e999").
  while (mantissa % 1000n === 0n && (format === "DecimalExponent" || exponent < 18)) {
    mantissa /= 1000n;
    exponent += 3;
  }
  if (format === "DecimalExponent") return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  return `${mantissa}${DECIMAL_BY_EXPONENT.get(exponent) ?? ""}`;
}

/** Canonicalizes a quantity string ("1.5Gi" → "1536Mi"); throws ValidationError if malformed. */
export function canonicalQuantity(input: string): string {
  return formatQuantity(parseQuantity(input));
}

/** -1, 0 or 1. */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  return a.nanos < b.nanos ? -1 : a.nanos > b.nanos ? 1 : 0;
}

/** Whole units (e.g. bytes), rounded up as upstream's Value(). */
export function quantityValue(quantity: Quantity): bigint {
  return divRoundUp(quantity.nanos, NANO);
}

/** Milli-units, rounded up as upstream's MilliValue(). */
export function quantityMilliValue(quantity: Quantity): bigint {
  return divRoundUp(quantity.nanos, 1_000_000n);
}

/** A quantity of whole units (bytes) in the given format (BinarySI by default, as for storage). */
export function quantityFromValue(value: bigint | number, format: QuantityFormat = "BinarySI"): Quantity {
  return Object.freeze({ nanos: BigInt(value) * NANO, format });
}

export function addQuantities(a: Quantity, b: Quantity): Quantity {
  return Object.freeze({ nanos: a.nanos + b.nanos, format: a.format });
}

export function subtractQuantities(a: Quantity, b: Quantity): Quantity {
  return Object.freeze({ nanos: a.nanos - b.nanos, format: a.format });
}

/**
 * A byte count from a quantity ("10Mi", "1.5Gi", "100M", "1e9", or plain digits): the one parser
 * for byte flags and config files (hostpath's --capacity and sizes, sanity's volume sizes).
 * Whole bytes, rounded up as Value(); negative or beyond int64 is a ValidationError naming `what`.
 */
export function parseByteQuantity(text: string, what: string): bigint {
  let quantity: Quantity;
  try {
    quantity = parseQuantity(text.trim());
  } catch (error) {
    throw new ValidationError(
      `${what}: ${JSON.stringify(text)} is not a byte quantity (e.g. 10485760, 10Mi, 1Gi): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (quantity.nanos < 0n)
    throw new ValidationError(`${what}: ${JSON.stringify(text)} is not a byte quantity: it is negative`);
  const bytes = quantityValue(quantity);
  if (bytes > MAX_INT64) throw new ValidationError(`${what}: ${text} is out of range (beyond int64)`);
  return bytes;
}
