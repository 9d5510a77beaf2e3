/**
 * DynamoDB attribute values as they travel on the wire (`{"S": "…"}`, `{"N": "12.5"}`, …): their
 * validation, DynamoDB's number rules (exact decimals of up to 38 significant digits, stored
 * normalised), comparison and equality, and item size as DynamoDB counts it for capacity.
 */

/** An attribute value in DynamoDB's JSON: exactly one of these members is set. */
export interface AttributeValue {
  S?: string;
  N?: string;
  B?: string;
  BOOL?: boolean;
  NULL?: boolean;
  L?: AttributeValue[];
  M?: Record<string, AttributeValue>;
  SS?: string[];
  NS?: string[];
  BS?: string[];
}

export type Item = Record<string, AttributeValue>;

export type ValueType = 'S' | 'N' | 'B' | 'BOOL' | 'NULL' | 'L' | 'M' | 'SS' | 'NS' | 'BS';

const TYPES: readonly ValueType[] = ['S', 'N', 'B', 'BOOL', 'NULL', 'L', 'M', 'SS', 'NS', 'BS'];

/** A request DynamoDB refuses: its error code (the part of `__type` after `#`) and message. */
export class DynamoError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** Members the error carries besides its message (CancellationReasons, Item, ThrottlingReasons). */
    readonly extra: Record<string, unknown> = {},
    readonly status = 400,
  ) {
    super(message);
  }
}

export function validation(message: string): DynamoError {
  return new DynamoError('ValidationException', message);
}

/** The one type member an attribute value sets. */
export function typeOf(value: AttributeValue): ValueType {
  for (const type of TYPES) if (value[type] !== undefined) return type;
  throw validation('Supplied AttributeValue is empty, must contain exactly one of the supported datatypes');
}

/**
 * Checks a value from a request and returns it normalised as DynamoDB stores it (numbers
 * without leading or trailing zeros). Throws the ValidationException DynamoDB sends.
 */
export function checkValue(value: unknown): AttributeValue {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw validation('Supplied AttributeValue is empty, must contain exactly one of the supported datatypes');
  }
  const members = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined);
  if (members.length !== 1 || !TYPES.includes(members[0] as ValueType)) {
    throw validation(
      members.length > 1
        ? 'Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes'
        : 'Supplied AttributeValue is empty, must contain exactly one of the supported datatypes',
    );
  }
  const v = value as AttributeValue;
  switch (members[0] as ValueType) {
    case 'S':
      if (typeof v.S !== 'string') throw validation('Invalid attribute value type');
      return v;
    case 'N':
      return { N: normaliseNumber(String(v.N)) };
    case 'B':
      if (typeof v.B !== 'string') throw validation('Invalid attribute value type');
      return v;
    case 'BOOL':
      if (typeof v.BOOL !== 'boolean') throw validation('Invalid attribute value type');
      return v;
    case 'NULL':
      if (v.NULL !== true)
        throw validation(
          'One or more parameter values were invalid: Null attribute value types must have the value of true',
        );
      return v;
    case 'L':
      if (!Array.isArray(v.L)) throw validation('Invalid attribute value type');
      return { L: v.L.map(checkValue) };
    case 'M': {
      if (v.M === null || typeof v.M !== 'object') throw validation('Invalid attribute value type');
      const out: Record<string, AttributeValue> = {};
      for (const [name, member] of Object.entries(v.M)) out[name] = checkValue(member);
      return { M: out };
    }
    case 'SS':
      return { SS: checkSet(v.SS, 'string', (s) => s) };
    case 'NS':
      return { NS: checkSet(v.NS, 'number', (s) => normaliseNumber(s)) };
    case 'BS':
      return { BS: checkSet(v.BS, 'binary', (s) => s) };
  }
}

function checkSet(values: unknown, what: string, normalise: (s: string) => string): string[] {
  if (!Array.isArray(values)) throw validation('Invalid attribute value type');
  if (values.length === 0)
    throw validation(`One or more parameter values were invalid: An ${what} set  may not be empty`);
  const out = values.map((s) => normalise(String(s)));
  if (new Set(out).size !== out.length) {
    throw validation(
      `One or more parameter values were invalid: Input collection [${out.join(', ')}] contains duplicates.`,
    );
  }
  return out;
}

/** Checks every attribute of an item (or key), normalising its numbers. */
export function checkItem(item: unknown, what = 'Item'): Item {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    throw validation(`One or more parameter values were invalid: ${what} is missing or not a map`);
  }
  const out: Item = {};
  for (const [name, value] of Object.entries(item)) {
    if (name.length === 0)
      throw validation(
        'One or more parameter values were invalid: An AttributeValue may not contain an empty attribute name',
      );
    out[name] = checkValue(value);
  }
  return out;
}

// --- Numbers: exact decimals, as DynamoDB keeps them -------------------------------------------

/** A decimal number: `digits × 10^exponent`, digits without trailing zeros (0 is 0n × 10^0). */
export interface Decimal {
  digits: bigint;
  exponent: number;
}

const NUMBER = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

export function parseDecimal(text: string): Decimal {
  const match = NUMBER.exec(text.trim());
  if (!match || (match[2] === '' && (match[3] ?? '') === '')) {
    throw validation('A value provided cannot be converted into a number');
  }
  const [, sign, whole = '', fraction = '', exp = '0'] = match;
  let digits = BigInt(`${whole}${fraction}` || '0');
  let exponent = Number(exp) - fraction.length;
  if (digits === 0n) return { digits: 0n, exponent: 0 };
  while (digits % 10n === 0n) {
    digits /= 10n;
    exponent += 1;
  }
  const precision = (digits < 0n ? -digits : digits).toString().length;
  if (precision > 38) throw validation('Attempting to store more than 38 significant digits in a Number');
  const magnitude = precision + exponent;
  if (magnitude > 126)
    throw validation(
      'Number overflow. Attempting to store a number with magnitude larger than supported range',
    );
  if (magnitude < -129)
    throw validation(
      'Number underflow. Attempting to store a number with magnitude smaller than supported range',
    );
  return { digits: sign === '-' ? -digits : digits, exponent };
}

export function formatDecimal({ digits, exponent }: Decimal): string {
  if (digits === 0n) return '0';
  const negative = digits < 0n;
  const text = (negative ? -digits : digits).toString();
  let out: string;
  if (exponent >= 0) out = text + '0'.repeat(exponent);
  else if (-exponent < text.length)
    out = `${text.slice(0, text.length + exponent)}.${text.slice(text.length + exponent)}`;
  else out = `0.${'0'.repeat(-exponent - text.length)}${text}`;
  return negative ? `-${out}` : out;
}

export function normaliseNumber(text: string): string {
  return formatDecimal(parseDecimal(text));
}

function aligned(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const exponent = Math.min(a.exponent, b.exponent);
  return [
    a.digits * 10n ** BigInt(a.exponent - exponent),
    b.digits * 10n ** BigInt(b.exponent - exponent),
    exponent,
  ];
}

/** a + b (or a − b), exact, checked against DynamoDB's precision. */
export function addNumbers(a: string, b: string, subtract = false): string {
  const [x, y, exponent] = aligned(parseDecimal(a), parseDecimal(b));
  return normaliseNumber(formatDecimal({ digits: subtract ? x - y : x + y, exponent }));
}

export function compareNumbers(a: string, b: string): number {
  const [x, y] = aligned(parseDecimal(a), parseDecimal(b));
  return x < y ? -1 : x > y ? 1 : 0;
}

// --- Ordering and equality ---------------------------------------------------------------------

/**
 * Compares strings in UTF-8 byte order, as DynamoDB does (which is code point order; JavaScript
 * compares UTF-16 code units, which differs only between surrogates and U+E000–U+FFFF).
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs === ys) return x - y;
    return xs ? 1 : -1;
  }
  return a.length - b.length;
}

export function compareBinary(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'base64'), Buffer.from(b, 'base64'));
}

/**
 * Orders two scalars of the same type (S, N or B); undefined when they cannot be ordered
 * (different types, or not scalars): every ordering comparison is then false.
 */
export function compareScalars(a: AttributeValue, b: AttributeValue): number | undefined {
  if (a.S !== undefined && b.S !== undefined) return compareUtf8(a.S, b.S);
  if (a.N !== undefined && b.N !== undefined) return compareNumbers(a.N, b.N);
  if (a.B !== undefined && b.B !== undefined) return compareBinary(a.B, b.B);
  return undefined;
}

export function equalValues(a: AttributeValue, b: AttributeValue): boolean {
  const type = typeOf(a);
  if (type !== typeOf(b)) return false;
  switch (type) {
    case 'S':
    case 'B':
    case 'BOOL':
    case 'NULL':
      return a[type] === b[type];
    case 'N':
      return compareNumbers(a.N!, b.N!) === 0;
    case 'L':
      return a.L!.length === b.L!.length && a.L!.every((v, i) => equalValues(v, b.L![i]!));
    case 'M': {
      const ka = Object.keys(a.M!);
      return (
        ka.length === Object.keys(b.M!).length &&
        ka.every((k) => b.M![k] !== undefined && equalValues(a.M![k]!, b.M![k]!))
      );
    }
    case 'SS':
    case 'BS': {
      const set = new Set(a[type]);
      return set.size === b[type]!.length && b[type]!.every((v) => set.has(v));
    }
    case 'NS': {
      const set = new Set(a.NS!.map(normaliseNumber));
      return set.size === b.NS!.length && b.NS!.every((v) => set.has(normaliseNumber(v)));
    }
  }
}

// --- Size --------------------------------------------------------------------------------------

/**
 * An item's size as DynamoDB counts it for capacity and the 400 KB limit: each attribute's name
 * (UTF-8 bytes) plus its value. Strings: UTF-8 bytes; binary: bytes; numbers: one byte per two
 * significant digits plus one; booleans and null: 1 byte; lists and maps: 3 bytes plus 1 per
 * element plus the elements (a map's names included); sets: their elements. DynamoDB documents
 * these rules as approximations; its exact figure for numbers and nested documents may differ
 * by a few bytes.
 */
export function itemSize(item: Item): number {
  let size = 0;
  for (const name in item) size += Buffer.byteLength(name) + valueSize(item[name]!);
  return size;
}

export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return Buffer.byteLength(value.B, 'base64');
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) {
    let size = 3;
    for (const element of value.L) size += 1 + valueSize(element);
    return size;
  }
  if (value.M !== undefined) {
    let size = 3;
    for (const name in value.M) size += 1 + Buffer.byteLength(name) + valueSize(value.M[name]!);
    return size;
  }
  if (value.SS !== undefined) return value.SS.reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((n, s) => n + numberSize(s), 0);
  if (value.BS !== undefined) return value.BS.reduce((n, s) => n + Buffer.byteLength(s, 'base64'), 0);
  return 0;
}

function numberSize(text: string): number {
  const { digits } = parseDecimal(text);
  const significant = digits === 0n ? 1 : (digits < 0n ? -digits : digits).toString().length;
  return Math.ceil(significant / 2) + 1;
}
