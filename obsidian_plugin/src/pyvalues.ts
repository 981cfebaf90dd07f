/**
 * Values as the Python side sees them, so the plugin writes the same bytes as `vaultmem`.
 *
 * - YAML scalars resolve the way PyYAML (YAML 1.1) resolves them: `yes` is a bool,
 *   `2026-01-05` a date, `1:20` an integer. The `yaml` package parses the structure with
 *   the failsafe schema (every scalar a string, quoting known), and `resolvePlain` types it.
 * - JSON as Python's `json.dumps(..., sort_keys=True, ensure_ascii=False)` writes it:
 *   floats keep their `.0` and switch to exponents where `repr` does.
 * - Rounding as Python's `round(x, n)` and `f"{x:.6f}"` round (exact decimal of the double).
 */

export class PyFloat {
  constructor(readonly value: number) {}
}

export type PyDate = { kind: "date"; y: number; m: number; d: number };
export type PyDateTime = { kind: "datetime"; epoch: number; aware: boolean; text: string };
export type PyValue = null | boolean | number | string | PyFloat | PyDate | PyDateTime | PyValue[] | { [key: string]: PyValue };

const BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;
const FLOAT = /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const INT = /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/;
const NULL = /^(?:~|null|Null|NULL|)$/;
const TIMESTAMP = /^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$/;

/** The Python value PyYAML gives an unquoted scalar. */
export function resolvePlain(text: string): PyValue {
  if (BOOL.test(text)) return /^(?:yes|true|on)$/i.test(text);
  if (NULL.test(text)) return null;
  if (INT.test(text)) return parseYamlInt(text);
  if (FLOAT.test(text)) return new PyFloat(parseYamlFloat(text));
  if (TIMESTAMP.test(text)) return parseTimestamp(text);
  if (text === "<<" || text === "=") throw new Error(`unsupported YAML value ${text}`);
  return text;
}

/** Whether PyYAML would read an unquoted `text` as a string (not a bool, number, date or null). */
export function resolvesToString(text: string): boolean {
  return !(BOOL.test(text) || NULL.test(text) || INT.test(text) || FLOAT.test(text) || TIMESTAMP.test(text)
    || text === "<<" || text === "=");
}

function sexagesimal(text: string): number {
  return text.split(":").reduce((total, part) => total * 60 + Number(part), 0);
}

function parseYamlInt(raw: string): number {
  let text = raw.replace(/_/g, "");
  let sign = 1;
  if (text[0] === "-" || text[0] === "+") {
    if (text[0] === "-") sign = -1;
    text = text.slice(1);
  }
  if (text === "0") return 0;
  if (text.startsWith("0b")) return sign * parseInt(text.slice(2), 2);
  if (text.startsWith("0x")) return sign * parseInt(text.slice(2), 16);
  if (text.startsWith("0")) return sign * parseInt(text, 8);
  if (text.includes(":")) return sign * sexagesimal(text);
  return sign * Number(text);
}

function parseYamlFloat(raw: string): number {
  let text = raw.replace(/_/g, "").toLowerCase();
  let sign = 1;
  if (text[0] === "-" || text[0] === "+") {
    if (text[0] === "-") sign = -1;
    text = text.slice(1);
  }
  if (text === ".inf") return sign * Infinity;
  if (text === ".nan") return NaN;
  if (text.includes(":")) return sign * sexagesimal(text);
  return sign * Number(text);
}

function parseTimestamp(text: string): PyValue {
  const date = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(text);
  if (date) return checkedDate(+date[1], +date[2], +date[3]);
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[Tt]|[ \t]+)(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d*))?(?:[ \t]*(Z|[-+]\d{1,2}(?::\d{2})?))?$/.exec(text)!;
  checkedDate(+m[1], +m[2], +m[3]);
  let epoch = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) / 1000;
  const zone = m[8];
  if (zone && zone !== "Z") {
    const [hours, minutes] = zone.slice(1).split(":");
    const offset = (Number(hours) * 60 + Number(minutes || 0)) * 60;
    epoch -= zone[0] === "-" ? -offset : offset;
  }
  return { kind: "datetime", epoch, aware: zone !== undefined, text };
}

function checkedDate(y: number, m: number, d: number): PyDate {
  const probe = new Date(Date.UTC(y, m - 1, d));
  if (probe.getUTCFullYear() !== y || probe.getUTCMonth() !== m - 1 || probe.getUTCDate() !== d) {
    throw new Error(`day is out of range for month (${y}-${m}-${d})`);
  }
  return { kind: "date", y, m, d };
}

/** Python's `str()` of a value PyYAML produced (what `str(value).strip()` starts from). */
export function pyStr(value: PyValue): string {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return String(value);
  if (value instanceof PyFloat) return floatRepr(value.value);
  if (typeof value === "string") return value;
  if (Array.isArray(value)) throw new Error("a list");
  if ((value as PyDate).kind === "date") {
    const v = value as PyDate;
    return `${String(v.y).padStart(4, "0")}-${pad(v.m)}-${pad(v.d)}`;
  }
  if ((value as PyDateTime).kind === "datetime") {
    const v = value as PyDateTime;
    return formatStamp(v.epoch).replace("T", " ") + (v.aware ? "+00:00" : "");
  }
  throw new Error("a map");
}

export function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/** Python's `repr(float)`: shortest round-trip digits, `.0` on whole numbers, exponents below 1e-4 and from 1e16. */
export function floatRepr(value: number): string {
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const abs = Math.abs(value);
  if (abs >= 1e16 || abs < 1e-4) {
    const [mantissa, exponent] = value.toExponential().split("e");
    const exp = Number(exponent);
    return `${mantissa}e${exp < 0 ? "-" : "+"}${pad(Math.abs(exp))}`;
  }
  const text = String(value);
  return text.includes(".") ? text : `${text}.0`;
}

/** `json.dumps(value, ensure_ascii=False, sort_keys=True)` with `", "` and `": "` separators, or the compact ones. */
export function pyJson(value: unknown, compact = false): string {
  const comma = compact ? "," : ", ";
  const colon = compact ? ":" : ": ";
  if (value === null || value === undefined) return "null";
  if (value instanceof PyFloat) return floatRepr(value.value).replace("inf", "Infinity").replace("nan", "NaN");
  if (typeof value === "number") {
    if (!Number.isInteger(value)) throw new Error(`a float must be a PyFloat: ${value}`);
    return String(value);
  }
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => pyJson(item, compact)).join(comma)}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}${colon}${pyJson(v, compact)}`).join(comma)}}`;
}

/** Python's `round(x, digits)` (exact decimal of the double; ties cannot occur for the values written here). */
export function pyRound(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

/** The stored datetime form: UTC, no offset, seconds. */
export function formatStamp(epoch: number): string {
  const d = new Date(epoch * 1000);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** Python's `datetime.isoformat()` of an aware UTC datetime. */
export function isoUtc(epoch: number): string {
  return `${formatStamp(epoch)}+00:00`;
}

/** `timefmt.parse_datetime` on text: ISO forms, a space for the T, `Z` or an offset; UTC when none. */
export function parseDateText(raw: string): number {
  let text = raw.trim();
  if (text.endsWith("Z")) text = text.slice(0, -1) + "+00:00";
  if (text.length > 10) text = text.replace(" ", "T");
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2})(?::(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?([-+]\d{2}:\d{2}(?::\d{2})?)?)?$/.exec(text);
  if (!m) throw new Error("not a datetime");
  checkedDate(+m[1], +m[2], +m[3]);
  let epoch = Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] || 0), +(m[5] || 0), +(m[6] || 0)) / 1000;
  if (m[8]) {
    const [hours, minutes] = m[8].slice(1).split(":");
    const offset = (Number(hours) * 60 + Number(minutes)) * 60;
    epoch -= m[8][0] === "-" ? -offset : offset;
  }
  return epoch;
}
