import type { z } from 'zod';

/**
 * Turning model text into a validated answer. Models wrap JSON in code fences or prose even
 * when told not to; we take the first balanced JSON object and let zod decide the rest.
 */

/** The first balanced `{…}` in the text (strings and escapes respected), parsed; else undefined. */
export function extractJsonObject(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
  const candidates = fenced?.[1] ? [fenced[1], text] : [text];
  for (const candidate of candidates) {
    let start = candidate.indexOf('{');
    while (start >= 0) {
      const end = matchingBrace(candidate, start);
      if (end < 0) break;
      try {
        return JSON.parse(candidate.slice(start, end + 1));
      } catch {
        start = candidate.indexOf('{', start + 1);
      }
    }
  }
  return undefined;
}

function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i += 1;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') depth += 1;
    else if (ch === '}') {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** A parse result: the value, or a problem worth showing to a human (or back to the model). */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** The first JSON object in `text`, validated by `schema`; the problems say what is wrong, with paths. */
export function parseAnswer<T>(text: string, schema: z.ZodType<T>): Parsed<T> {
  const json = extractJsonObject(text);
  if (json === undefined) return { ok: false, problem: 'no JSON object found in the answer' };
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'answer'}: ${i.message}`);
  return { ok: false, problem: problems.join('; ') };
}
