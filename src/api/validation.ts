// Field errors and name/label/qualified-name validators with apimachinery's exact messages.
// A FieldError is what the API server reports as one Status.details.causes[] entry: `message`
// is upstream's "error body" (e.g. `Invalid value: "X": a lowercase RFC 1123 …`), `field` the
// JSON path. invalidStatusMessage() builds Status.message the way kube-apiserver does.

export type FieldErrorReason =
  | "FieldValueRequired"
  | "FieldValueInvalid"
  | "FieldValueNotSupported"
  | "FieldValueForbidden"
  | "FieldValueDuplicate"
  | "FieldValueTooLong"
  | "FieldValueTooMany"
  | "FieldValueNotFound"
  | "InternalError";

export interface FieldError {
  reason: FieldErrorReason;
  message: string;
  field: string;
}

const GO_RENDERED = Symbol("go-rendered");

/** A value already written as upstream prints it (Go's %#v of a map, a struct): shown as is. */
export interface GoRendered {
  readonly [GO_RENDERED]: string;
}

export function goRendered(text: string): GoRendered {
  return { [GO_RENDERED]: text };
}

/** Renders a value as upstream's field errors do: strings quoted, numbers and booleans bare. */
export function renderValue(value: unknown): string {
  if (typeof value === "object" && value !== null && GO_RENDERED in value) return String(value[GO_RENDERED]);
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    return String(value);
  if (value === null || value === undefined) return "null";
  return JSON.stringify(value);
}

function withDetail(body: string, detail: string | undefined): string {
  return detail === undefined || detail === "" ? body : `${body}: ${detail}`;
}

export function fieldRequired(field: string, detail?: string): FieldError {
  return { reason: "FieldValueRequired", message: withDetail("Required value", detail), field };
}

export function fieldInvalid(field: string, value: unknown, detail?: string): FieldError {
  return {
    reason: "FieldValueInvalid",
    message: withDetail(`Invalid value: ${renderValue(value)}`, detail),
    field,
  };
}

export function fieldNotSupported(field: string, value: unknown, supported: readonly string[]): FieldError {
  const list = supported.map((s) => JSON.stringify(s)).join(", ");
  return {
    reason: "FieldValueNotSupported",
    message: withDetail(
      `Unsupported value: ${renderValue(value)}`,
      supported.length > 0 ? `supported values: ${list}` : undefined,
    ),
    field,
  };
}

export function fieldForbidden(field: string, detail: string): FieldError {
  return { reason: "FieldValueForbidden", message: withDetail("Forbidden", detail), field };
}

export function fieldDuplicate(field: string, value: unknown): FieldError {
  return { reason: "FieldValueDuplicate", message: `Duplicate value: ${renderValue(value)}`, field };
}

export function fieldTooLong(field: string, maxLength: number): FieldError {
  return { reason: "FieldValueTooLong", message: `Too long: may not be more than ${maxLength} bytes`, field };
}

export function fieldTooMany(field: string, actual: number, max: number): FieldError {
  return {
    reason: "FieldValueTooMany",
    message: `Too many: ${actual}: must have at most ${max} items`,
    field,
  };
}

/** The error message of a field-immutability violation, as ValidateImmutableField reports it. */
export const FIELD_IMMUTABLE = "field is immutable";

/** One error's full text: "<field>: <body>". */
export function fieldErrorString(error: FieldError): string {
  return error.field === "" ? error.message : `${error.field}: ${error.message}`;
}

/**
 * Status.message of a 422: `<Kind[.group]> "<name>" is invalid: <errors>` where several errors
 * are joined with ", " inside brackets (upstream's aggregate form).
 */
export function invalidStatusMessage(
  group: string,
  kind: string,
  name: string,
  errors: readonly FieldError[],
): string {
  const qualified = group === "" ? kind : `${kind}.${group}`;
  const prefix = `${qualified} ${JSON.stringify(name)} is invalid`;
  if (errors.length === 0) return prefix;
  const texts = [...new Set(errors.map(fieldErrorString))];
  return `${prefix}: ${texts.length === 1 ? texts[0] : `[${texts.join(", ")}]`}`;
}

// ---- Names -----------------------------------------------------------------------------

/** apimachinery's RegexError: message, examples and the regex used. */
function regexError(message: string, regex: string, ...examples: string[]): string {
  if (examples.length === 0) return `${message} (regex used for validation is '${regex}')`;
  let text = `${message} (e.g. `;
  examples.forEach((example, i) => {
    if (i > 0) text += " or ";
    text += `'${example}', `;
  });
  return `${text}regex used for validation is '${regex}')`;
}

export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

const DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_RE = new RegExp(`^${DNS1123_LABEL_FMT}$`);
export const DNS1123_LABEL_MAX_LENGTH = 63;
const DNS1123_LABEL_ERR =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const DNS1123_SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/** Problems with `value` as an RFC 1123 label (namespace names, …); [] when valid. */
export function isDNS1123Label(value: string): string[] {
  const errors: string[] = [];
  if (value.length > DNS1123_LABEL_MAX_LENGTH) errors.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL_RE.test(value))
    errors.push(regexError(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"));
  return errors;
}

/** Problems with `value` as an RFC 1123 subdomain (most object names); [] when valid. */
export function isDNS1123Subdomain(value: string): string[] {
  const errors: string[] = [];
  if (value.length > DNS1123_SUBDOMAIN_MAX_LENGTH) errors.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN_RE.test(value))
    errors.push(regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"));
  return errors;
}

/** A name validator: `prefix` true validates a generateName (a trailing "-" is allowed). */
export type NameValidator = (name: string, prefix: boolean) => string[];

function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith("-") ? `${name.slice(0, -2)}a` : name;
}

export const nameIsDNSSubdomain: NameValidator = (name, prefix) =>
  isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);
export const nameIsDNSLabel: NameValidator = (name, prefix) =>
  isDNS1123Label(prefix ? maskTrailingDash(name) : name);

/** Names that must be a valid path segment (PVs, leases …): not "." / "..", no "/" or "%". */
export const nameIsPathSegment: NameValidator = (name, prefix) => {
  const errors: string[] = [];
  if (!prefix && (name === "." || name === "..")) errors.push(`may not be '${name}'`);
  for (const illegal of ["/", "%"]) {
    if (name.includes(illegal)) errors.push(`may not contain '${illegal}'`);
  }
  return errors;
};

const QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_RE = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const QUALIFIED_NAME_ERR =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX_LENGTH = 63;

/** Problems with a qualified name ("[prefix/]name": label keys, annotation keys, finalizers). */
export function isQualifiedName(value: string): string[] {
  const errors: string[] = [];
  const parts = value.split("/");
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? "";
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? "";
    name = parts[1] ?? "";
    if (prefix.length === 0) errors.push(`prefix part ${EMPTY_ERR}`);
    else for (const message of isDNS1123Subdomain(prefix)) errors.push(`prefix part ${message}`);
  } else {
    return [
      `a qualified name ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errors.push(`name part ${EMPTY_ERR}`);
  else if (name.length > QUALIFIED_NAME_MAX_LENGTH)
    errors.push(`name part ${maxLenError(QUALIFIED_NAME_MAX_LENGTH)}`);
  if (!QUALIFIED_NAME_RE.test(name)) {
    errors.push(
      `name part ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")}`,
    );
  }
  return errors;
}

const EMPTY_ERR = "must be non-empty";

const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const LABEL_VALUE_ERR =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** Problems with a label value; [] when valid. */
export function isValidLabelValue(value: string): string[] {
  const errors: string[] = [];
  if (value.length > 63) errors.push(maxLenError(63));
  if (!LABEL_VALUE_RE.test(value))
    errors.push(regexError(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"));
  return errors;
}

/** Field errors for a label map at `field` (e.g. "metadata.labels"). */
export function validateLabels(labels: unknown, field: string): FieldError[] {
  if (labels === undefined || labels === null) return [];
  if (typeof labels !== "object" || Array.isArray(labels))
    return [fieldInvalid(field, labels, "must be a map of strings")];
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries(labels)) {
    for (const message of isQualifiedName(key)) errors.push(fieldInvalid(field, key, message));
    if (typeof value !== "string") {
      errors.push(fieldInvalid(`${field}`, value, "label values must be strings"));
      continue;
    }
    for (const message of isValidLabelValue(value)) errors.push(fieldInvalid(field, value, message));
  }
  return errors;
}

/** Total size limit of all annotations on one object (256 KiB). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

export function validateAnnotations(annotations: unknown, field: string): FieldError[] {
  if (annotations === undefined || annotations === null) return [];
  if (typeof annotations !== "object" || Array.isArray(annotations)) {
    return [fieldInvalid(field, annotations, "must be a map of strings")];
  }
  const errors: FieldError[] = [];
  let total = 0;
  for (const [key, value] of Object.entries(annotations)) {
    for (const message of isQualifiedName(key.toLowerCase())) errors.push(fieldInvalid(field, key, message));
    if (typeof value !== "string")
      errors.push(fieldInvalid(field, value, "annotation values must be strings"));
    else total += key.length + value.length;
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) errors.push(fieldTooLong(field, TOTAL_ANNOTATION_SIZE_LIMIT));
  return errors;
}

const STANDARD_FINALIZERS = new Set(["kubernetes", "orphan", "foregroundDeletion"]);

export function validateFinalizers(finalizers: unknown, field: string): FieldError[] {
  if (finalizers === undefined || finalizers === null) return [];
  if (!Array.isArray(finalizers)) return [fieldInvalid(field, finalizers, "must be a list of strings")];
  const errors: FieldError[] = [];
  finalizers.forEach((finalizer: unknown, i) => {
    if (typeof finalizer !== "string") {
      errors.push(fieldInvalid(`${field}[${i}]`, finalizer, "must be a string"));
      return;
    }
    for (const message of isQualifiedName(finalizer)) errors.push(fieldInvalid(field, finalizer, message));
    if (!STANDARD_FINALIZERS.has(finalizer) && !finalizer.includes("/")) {
      errors.push(
        fieldInvalid(field, finalizer, "name is neither a standard finalizer name nor is it fully qualified"),
      );
    }
  });
  return errors;
}
