// What Go's JSON decoding says about a text that JavaScript's JSON.parse cannot tell us: the
// syntax error encoding/json reports (its scanner's exact wording, used where kube-apiserver
// quotes it, e.g. a dockerconfigjson Secret's payload), and the duplicate object keys
// sigs.k8s.io/json reports under strict decoding (`duplicate field "spec.replicas"`, paths as
// unknown fields are named: dotted keys, `[i]` for list items). One iterative scan, no
// recursion, linear in the text.

/** Go's quoteChar: how the scanner names the offending byte (the text is scanned as bytes). */
function quoteChar(c: string): string {
  if (c === "'") return `'\\''`;
  if (c === '"') return `'"'`;
  const code = c.charCodeAt(0);
  // strconv.Quote of the byte as a rune: printable ones as they are, others escaped.
  const escapes: Record<number, string> = {
    7: "\\a",
    8: "\\b",
    9: "\\t",
    10: "\\n",
    11: "\\v",
    12: "\\f",
    13: "\\r",
    92: "\\\\",
  };
  const escape = escapes[code];
  if (escape !== undefined) return `'${escape}'`;
  if (code < 0x20 || code === 0x7f) return `'\\x${code.toString(16).padStart(2, "0")}'`;
  if ((code >= 0x80 && code < 0xa0) || code === 0xad) return `'\\u${code.toString(16).padStart(4, "0")}'`;
  return `'${c}'`;
}

class GoSyntaxError extends Error {}

function invalid(c: string, context: string): GoSyntaxError {
  return new GoSyntaxError(`invalid character ${quoteChar(c)} ${context}`);
}

const END = new GoSyntaxError("unexpected end of JSON input");

interface Frame {
  kind: "object" | "array";
  path: string;
  keys: Set<string>;
  index: number;
}

export interface GoJsonScan {
  /** encoding/json's syntax error, undefined when the text is valid JSON. */
  syntaxError?: string;
  /** The top-level value's kind: "object", "array", "string", "number", "bool" or "null". */
  kind?: string;
  /** Paths of repeated object keys, in document order. */
  duplicates: string[];
}

const WS = new Set([" ", "\t", "\n", "\r"]);

/** Scans `bytes` as Go's encoding/json does (see the header). */
export function scanGoJson(bytes: Buffer): GoJsonScan {
  const duplicates: string[] = [];
  let kind: string | undefined;
  try {
    // One character per byte, as Go's scanner sees the input; keys are read back as UTF-8.
    kind = scan(bytes.toString("latin1"), duplicates);
  } catch (error) {
    if (error instanceof GoSyntaxError) return { syntaxError: error.message, duplicates };
    throw error;
  }
  return { kind, duplicates };
}

function scan(text: string, duplicates: string[]): string {
  let i = 0;
  const skipSpace = (): void => {
    while (i < text.length && WS.has(text[i] ?? "")) i++;
  };
  const stack: Frame[] = [];
  let topKind = "";
  // A value is expected at `path`; `context` names what the scanner was looking for.
  const readValue = (path: string, context: string): void => {
    skipSpace();
    if (i >= text.length) throw END;
    const c = text[i] ?? "";
    const kind = valueKind(c);
    if (stack.length === 0) topKind = kind;
    if (c === "{" || c === "[") {
      i++;
      stack.push({ kind: c === "{" ? "object" : "array", path, keys: new Set(), index: 0 });
      return;
    }
    if (c === '"') {
      readString();
      return;
    }
    if (c === "-" || (c >= "0" && c <= "9")) return readNumber();
    for (const literal of ["true", "false", "null"]) {
      if (c === literal[0]) return readLiteral(literal);
    }
    throw invalid(c, context);
  };
  const readLiteral = (literal: string): void => {
    for (let k = 0; k < literal.length; k++, i++) {
      if (i >= text.length) throw END;
      const c = text[i] ?? "";
      if (c !== literal[k])
        throw invalid(c, `in literal ${literal} (expecting ${quoteChar(literal[k] ?? "")})`);
    }
  };
  const readString = (): string => {
    const start = ++i;
    let raw = false;
    for (;;) {
      if (i >= text.length) throw END;
      const c = text[i] ?? "";
      if (c === '"') break;
      if (c === "\\") {
        raw = true;
        i++;
        if (i >= text.length) throw END;
        const e = text[i] ?? "";
        if (e === "u") {
          for (let k = 1; k <= 4; k++) {
            if (i + k >= text.length) throw END;
            const h = text[i + k] ?? "";
            if (!/[0-9a-fA-F]/.test(h)) throw invalid(h, "in \\u hexadecimal character escape");
          }
          i += 5;
          continue;
        }
        if (!'"\\/bfnrt'.includes(e)) throw invalid(e, "in string escape code");
        i++;
        continue;
      }
      if (c < " ") throw invalid(c, "in string literal");
      i++;
    }
    const body = Buffer.from(text.slice(start, i), "latin1").toString("utf8");
    i++;
    return raw ? (JSON.parse(`"${body}"`) as string) : body;
  };
  const digits = (context: string): void => {
    if (i >= text.length) throw END;
    const c = text[i] ?? "";
    if (c < "0" || c > "9") throw invalid(c, context);
    while (i < text.length && (text[i] ?? "") >= "0" && (text[i] ?? "") <= "9") i++;
  };
  const readNumber = (): void => {
    if (text[i] === "-") {
      i++;
      if (i >= text.length) throw END;
      const c = text[i] ?? "";
      if (c < "0" || c > "9") throw invalid(c, "in numeric literal");
    }
    if (text[i] === "0") i++;
    else digits("in numeric literal");
    if (text[i] === ".") {
      i++;
      digits("after decimal point in numeric literal");
    }
    if (text[i] === "e" || text[i] === "E") {
      i++;
      if (text[i] === "+" || text[i] === "-") i++;
      digits("in exponent of numeric literal");
    }
  };

  readValue("", "looking for beginning of value");
  for (;;) {
    const frame = stack.at(-1);
    if (frame === undefined) break;
    skipSpace();
    if (i >= text.length) throw END;
    const c = text[i] ?? "";
    const first = frame.index === 0;
    if (frame.kind === "array") {
      if (c === "]" && first) {
        i++;
        stack.pop();
        continue;
      }
      if (!first) {
        if (c === "]") {
          i++;
          stack.pop();
          continue;
        }
        if (c !== ",") throw invalid(c, "after array element");
        i++;
      }
      readValue(`${frame.path}[${frame.index}]`, "looking for beginning of value");
      frame.index++;
      continue;
    }
    if (c === "}" && first) {
      i++;
      stack.pop();
      continue;
    }
    if (!first) {
      if (c === "}") {
        i++;
        stack.pop();
        continue;
      }
      if (c !== ",") throw invalid(c, "after object key:value pair");
      i++;
      skipSpace();
      if (i >= text.length) throw END;
    }
    const quote = text[i] ?? "";
    if (quote !== '"') throw invalid(quote, "looking for beginning of object key string");
    const key = readString();
    const path = frame.path === "" ? key : `${frame.path}.${key}`;
    if (frame.keys.has(key)) duplicates.push(path);
    frame.keys.add(key);
    skipSpace();
    if (i >= text.length) throw END;
    const colon = text[i] ?? "";
    if (colon !== ":") throw invalid(colon, "after object key");
    i++;
    frame.index++;
    readValue(path, "looking for beginning of value");
  }
  skipSpace();
  if (i < text.length) throw invalid(text[i] ?? "", "after top-level value");
  return topKind;
}

function valueKind(c: string): string {
  if (c === "{") return "object";
  if (c === "[") return "array";
  if (c === '"') return "string";
  if (c === "t" || c === "f") return "bool";
  if (c === "n") return "null";
  return "number";
}

/**
 * The error of Go's `json.Unmarshal(text, &map[string]interface{}{})`: the syntax error, or
 * the type error when the value is no object (null is accepted, as Go leaves the map nil).
 */
export function goUnmarshalObjectError(bytes: Buffer): string | undefined {
  const scanned = scanGoJson(bytes);
  if (scanned.syntaxError !== undefined) return scanned.syntaxError;
  if (scanned.kind === "object" || scanned.kind === "null") return undefined;
  return `json: cannot unmarshal ${scanned.kind ?? "value"} into Go value of type map[string]interface {}`;
}
