import { toStrictJsonSchema } from 'openai/lib/transform';
import { describe, expect, it } from 'vitest';
import { answerJsonSchema } from '../../../shared/families/judge/answer.js';
import type { JudgeBlock } from '../../../shared/families/judge/suite.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import { dropOptionalNulls, strictSchema } from '../../../shared/lib/providers/strict-schema.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

/**
 * A judge's declared schema as a suite author writes it: nested objects left open, optional
 * properties, an array of objects and a union. OpenAI's strict structured output refuses it
 * as is; the OpenAI SDK's own strict-schema transform is the referee.
 */
const DECLARED = {
  type: 'object',
  properties: {
    evidence: {
      type: 'object',
      properties: {
        quote: { type: 'string' },
        line: { type: 'integer' },
        severity: { type: 'string', enum: ['low', 'high'] },
      },
      required: ['quote'],
    },
    issues: {
      type: 'array',
      items: {
        type: 'object',
        properties: { kind: { type: 'string' }, note: { type: 'string' } },
        required: ['kind'],
      },
    },
    extra: {
      anyOf: [{ type: 'object', properties: { url: { type: 'string' } } }, { type: 'string' }],
    },
    confidence: { type: 'number' },
  },
  required: ['evidence', 'issues'],
} as const;

type Json = Record<string, unknown>;
const copy = (value: unknown): Json => JSON.parse(JSON.stringify(value));

/**
 * The SDK's check: `toStrictJsonSchema` throws on a schema strict mode cannot take, and returns a
 * schema it had to close further otherwise; an already strict schema comes back unchanged.
 */
function sdkStrictVerdict(schema: Json): 'strict' | 'changed' | 'rejected' {
  let strict: unknown;
  try {
    strict = toStrictJsonSchema(copy(schema));
  } catch {
    return 'rejected';
  }
  return JSON.stringify(strict) === JSON.stringify(schema) ? 'strict' : 'changed';
}

describe('strictSchema', () => {
  it('turns a declared schema the SDK rejects into one its strict transform leaves unchanged', () => {
    expect(sdkStrictVerdict(copy(DECLARED))).toBe('rejected');
    // Open nested objects alone (every property required) are changed, not strict.
    const requiredButOpen = {
      type: 'object',
      properties: { a: { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] } },
      required: ['a'],
    };
    expect(sdkStrictVerdict(requiredButOpen)).toBe('changed');

    const strict = strictSchema(copy(DECLARED));

    expect(sdkStrictVerdict(strict)).toBe('strict');
    expect(sdkStrictVerdict(strictSchema(requiredButOpen))).toBe('strict');
  });

  it('closes every object, requires every property, and makes the optional ones nullable', () => {
    const strict = strictSchema(copy(DECLARED)) as Json & { properties: Record<string, Json> };
    const { evidence, issues, extra, confidence } = strict.properties as Record<string, Json>;

    expect(strict.additionalProperties).toBe(false);
    expect(strict.required).toEqual(['evidence', 'issues', 'extra', 'confidence']);
    expect(evidence).toEqual({
      type: 'object',
      properties: {
        quote: { type: 'string' },
        line: { type: ['integer', 'null'] },
        severity: { type: ['string', 'null'], enum: ['low', 'high', null] },
      },
      required: ['quote', 'line', 'severity'],
      additionalProperties: false,
    });
    expect(issues!.items).toEqual({
      type: 'object',
      properties: { kind: { type: 'string' }, note: { type: ['string', 'null'] } },
      required: ['kind', 'note'],
      additionalProperties: false,
    });
    // An optional union gets a null branch; its object branch is closed too.
    expect(extra).toEqual({
      anyOf: [
        {
          type: 'object',
          properties: { url: { type: ['string', 'null'] } },
          required: ['url'],
          additionalProperties: false,
        },
        { type: 'string' },
        { type: 'null' },
      ],
    });
    expect(confidence).toEqual({ type: ['number', 'null'] });
  });

  it('leaves the declared schema as it was and keeps a schema that is already strict as is', () => {
    const declared = copy(DECLARED);
    strictSchema(declared);
    expect(declared).toEqual(copy(DECLARED));

    const strict = strictSchema(copy(DECLARED));
    expect(strictSchema(strict)).toEqual(strict);
  });

  it('wraps a $ref or const property in anyOf with null, and closes definitions', () => {
    const strict = strictSchema({
      type: 'object',
      properties: { who: { $ref: '#/$defs/person' }, tag: { const: 'x' } },
      $defs: { person: { type: 'object', properties: { name: { type: 'string' } } } },
    });
    expect(strict.properties).toEqual({
      who: { anyOf: [{ $ref: '#/$defs/person' }, { type: 'null' }] },
      tag: { anyOf: [{ const: 'x' }, { type: 'null' }] },
    });
    expect((strict.$defs as Record<string, Json>).person).toMatchObject({
      additionalProperties: false,
      required: ['name'],
    });
    expect(sdkStrictVerdict(strict)).toBe('strict');
  });
});

describe('dropOptionalNulls', () => {
  it('reads a null given for an optional property as the property left out, at every depth', () => {
    const answer = {
      evidence: { quote: 'q', line: null, severity: 'high' },
      issues: [
        { kind: 'a', note: null },
        { kind: 'b', note: 'n' },
      ],
      extra: { url: null },
      confidence: null,
    };

    expect(dropOptionalNulls(answer, copy(DECLARED))).toEqual({
      evidence: { quote: 'q', severity: 'high' },
      issues: [{ kind: 'a' }, { kind: 'b', note: 'n' }],
      extra: {},
    });
  });

  it('keeps a null the declared schema allows, and a required one (the parser then says it is wrong)', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: ['string', 'null'] }, b: { type: 'string' } },
      required: ['b'],
    };
    expect(dropOptionalNulls({ a: null, b: null }, schema)).toEqual({ a: null, b: null });
  });
});

describe('the OpenAI adapter sends the normalised schema and reads nulls back as absent', () => {
  const fake = useVendorFake();
  const judge = {
    prompt: 'p.md',
    labels: ['polite', 'rude'],
    schema: { type: 'object', properties: { evidence: DECLARED.properties.evidence } },
  } as unknown as JudgeBlock;

  it('through the real SDK against the vendor fake', async () => {
    fake.setHandler(() => ({
      text: JSON.stringify({
        label: 'polite',
        reason: 'r',
        evidence: { quote: 'q', line: null, severity: null },
      }),
    }));
    const provider = createProvider('openai:gpt-4o-mini', { env: fake.env, prices: EMBEDDED_PRICES });
    const jsonSchema = answerJsonSchema(judge);

    const completion = await provider.complete({ model: 'gpt-4o-mini', prompt: 'judge', jsonSchema });

    const sent = fake.requests[0]!.body.response_format;
    expect(sent.type).toBe('json_schema');
    expect(sent.json_schema.strict).toBe(true);
    expect(sent.json_schema.schema).toEqual(strictSchema(jsonSchema.schema));
    expect(sent.json_schema.schema.properties.evidence).toMatchObject({
      additionalProperties: false,
      required: ['quote', 'line', 'severity'],
    });
    expect(sdkStrictVerdict(sent.json_schema.schema)).toBe('strict');
    expect(JSON.parse(completion.text)).toEqual({ label: 'polite', reason: 'r', evidence: { quote: 'q' } });
  });

  it('a compatible server in json_object mode gets no schema, and its answer is left as given', async () => {
    fake.setHandler(() => ({ text: '{"label":"rude","reason":"r","evidence":null}' }));
    const provider = createProvider('openai:gpt-4o-mini', {
      env: fake.env,
      prices: EMBEDDED_PRICES,
      structuredOutput: 'json_object',
    });

    const completion = await provider.complete({
      model: 'gpt-4o-mini',
      prompt: 'judge',
      jsonSchema: answerJsonSchema(judge),
    });

    expect(fake.requests[0]!.body.response_format).toEqual({ type: 'json_object' });
    expect(completion.text).toBe('{"label":"rude","reason":"r","evidence":null}');
  });
});
