/** Reading dataset records: the helpers every family's `parseRow` composes. */

import { createHash } from 'node:crypto';

/**
 * The first of the candidate columns present in a record: the suite's mapping when it names
 * one, else the family's defaults in order. Undefined when none is present. Ingest hands a
 * family a record that resolves dot paths and a suite whose several gold columns are one (see
 * dataset-row.ts); a list met here anyway is read as its first present column.
 */
export function readColumn(
  record: Record<string, string>,
  mapped: string | readonly string[] | undefined,
  defaults: readonly string[],
): { key: string; value: string } | undefined {
  for (const key of mapped ? (typeof mapped === 'string' ? [mapped] : mapped) : defaults) {
    const value = record[key];
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

/** An item id from its content, for rows without an id column: the same input, the same id. */
export function contentId(input: Record<string, string>): string {
  return createHash('sha256').update(JSON.stringify(input)).digest('hex').slice(0, 16);
}
