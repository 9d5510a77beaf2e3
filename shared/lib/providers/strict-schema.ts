/**
 * OpenAI's strict structured output accepts a subset of JSON Schema: every object closed
 * (`additionalProperties: false`) and every property listed in `required`. A schema a suite
 * declares (a judge's extra answer fields) is rarely written that way, so it is normalised before
 * it is sent: a property that was optional becomes required but nullable, and a `null` the model
 * then gives for it is read back as the property being absent ({@link dropOptionalNulls}), so the
 * answer still matches the schema as declared.
 */

type Schema = Record<string, unknown>;

/** Keywords whose value is one schema. */
const SINGLE = ['items', 'not', 'if', 'then', 'else', 'contains'] as const;
/** Keywords whose value is a list of schemas. */
const LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const;
/** Keywords whose value maps names to schemas (`properties` is handled on its own). */
const MAPS = ['$defs', 'definitions'] as const;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An object schema: `type: object` (alone or in a union), or object keywords without a type. */
function isObjectSchema(schema: Schema): boolean {
  const { type } = schema;
  if (type === 'object') return true;
  if (Array.isArray(type)) return type.includes('object');
  return type === undefined && (isSchema(schema.properties) || 'required' in schema);
}

/** True when the schema already admits `null` (so an optional property needs no change). */
function admitsNull(schema: unknown): boolean {
  if (schema === true) return true;
  if (!isSchema(schema)) return false;
  if (Object.keys(schema).length === 0) return true;
  const { type } = schema;
  if (type === 'null' || (Array.isArray(type) && type.includes('null'))) {
    return !Array.isArray(schema.enum) || schema.enum.includes(null);
  }
  if (type !== undefined) return false;
  if ('const' in schema) return schema.const === null;
  if (Array.isArray(schema.enum)) return schema.enum.includes(null);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches)) return branches.some(admitsNull);
  }
  return false;
}

/**
 * The schema made to also accept `null`: `null` added to a plain `type` (and to its `enum`), or
 * else the schema wrapped as `anyOf: [schema, {type: null}]` (a `$ref`, a `const`, a union).
 */
function nullable(schema: Schema): Schema {
  if (admitsNull(schema)) return schema;
  const { type } = schema;
  const plain =
    (typeof type === 'string' || Array.isArray(type)) &&
    !('const' in schema) &&
    !('$ref' in schema) &&
    LISTS.every((key) => !(key in schema));
  if (plain) {
    const types = Array.isArray(type) ? type : [type];
    const out: Schema = { ...schema, type: [...types, 'null'] };
    if (Array.isArray(schema.enum)) out.enum = [...schema.enum, null];
    return out;
  }
  if (Array.isArray(schema.anyOf) && Object.keys(schema).every((k) => k === 'anyOf' || k === 'description')) {
    return { ...schema, anyOf: [...schema.anyOf, { type: 'null' }] };
  }
  return { anyOf: [schema, { type: 'null' }] };
}

/**
 * The schema as OpenAI's strict mode wants it, at every depth (properties, array items, union
 * branches, definitions): each object gets `additionalProperties: false` and lists every property
 * in `required`; a property that was not required becomes nullable. The input is not changed.
 */
export function strictSchema(schema: Schema): Schema {
  const out: Schema = { ...schema };
  for (const key of SINGLE) {
    if (isSchema(out[key])) out[key] = strictSchema(out[key] as Schema);
  }
  for (const key of LISTS) {
    const list = out[key];
    if (Array.isArray(list))
      out[key] = list.map((branch) => (isSchema(branch) ? strictSchema(branch) : branch));
  }
  for (const key of MAPS) {
    const map = out[key];
    if (isSchema(map)) {
      out[key] = Object.fromEntries(
        Object.entries(map).map(([name, sub]) => [name, isSchema(sub) ? strictSchema(sub) : sub]),
      );
    }
  }
  if (!isObjectSchema(out)) return out;
  const properties = isSchema(out.properties) ? out.properties : {};
  const required = new Set(Array.isArray(out.required) ? (out.required as unknown[]) : []);
  out.properties = Object.fromEntries(
    Object.entries(properties).map(([name, sub]) => {
      const strict = isSchema(sub) ? strictSchema(sub) : sub;
      return [name, required.has(name) || !isSchema(strict) ? strict : nullable(strict)];
    }),
  );
  out.required = Object.keys(properties);
  out.additionalProperties = false;
  return out;
}

/**
 * Reads a strict-mode answer back against the schema as declared: a `null` given for a property
 * the declared schema made optional (and that does not itself admit `null`) is removed, as if the
 * model had left it out. Walks nested objects, array items, union branches and local `$ref`s.
 * The value is not changed; a copy is returned.
 */
export function dropOptionalNulls(value: unknown, schema: Schema, root: Schema = schema): unknown {
  return walk(value, schema, root, new Set());
}

function walk(value: unknown, schema: unknown, root: Schema, seen: Set<string>): unknown {
  if (!isSchema(schema) || value === null || typeof value !== 'object') return value;
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    if (seen.has(ref)) return value;
    const target = resolveLocalRef(root, ref);
    return target ? walk(value, target, root, new Set([...seen, ref])) : value;
  }
  let out: unknown = value;
  for (const key of LISTS) {
    const branches = schema[key];
    if (!Array.isArray(branches)) continue;
    for (const branch of branches) out = walk(out, branch, root, seen);
  }
  if (out === null || typeof out !== 'object') return out;
  if (Array.isArray(out)) {
    return isSchema(schema.items) ? out.map((item) => walk(item, schema.items, root, seen)) : out;
  }
  if (!isSchema(schema.properties)) return out;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as unknown[]) : []);
  const copy: Record<string, unknown> = { ...(out as Record<string, unknown>) };
  for (const [name, sub] of Object.entries(schema.properties)) {
    if (!(name in copy)) continue;
    if (copy[name] === null && !required.has(name) && !admitsNull(sub)) delete copy[name];
    else copy[name] = walk(copy[name], sub, root, seen);
  }
  return copy;
}

/** `#/$defs/name` (or any `#/…` JSON pointer) inside the root schema. */
function resolveLocalRef(root: Schema, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isSchema(node)) return undefined;
    node = node[part];
  }
  return node;
}
