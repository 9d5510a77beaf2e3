/**
 * One CSV cell as the CSVs the product writes hold it (labeled.csv, and the labelling page's
 * exported labels). Free of Node, so the labelling page's script bundles the same code.
 */
import { visible } from '../lib/format.js';
import { guardFormulas } from '../model/csv-guard.js';

/** A text cell quoted as RFC 4180 says, when it holds a quote, a separator, a line break or edge spaces. */
function quoted(text: string): string {
  return /[",;\t\r\n]/.test(text) || text !== text.trim() ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * A CSV cell that a spreadsheet will not execute and a terminal will not obey: control
 * characters (C0 but tab and line feed, DEL, C1: ESC first) written visibly as `\xNN`, then the
 * formula guard (model/csv-guard.ts), then quoted.
 */
export function csvCell(value: string | number | boolean | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') return String(value);
  return quoted(guardFormulas(visible(value)));
}

/**
 * A cell of the labels a person exports (`id,label,p`): the formula guard and quoting, but the
 * text kept byte for byte otherwise, so that `dataset.goldFile` merges each label with its item
 * by the exact id (the gold file reader takes the guard away again).
 */
export function labelCsvCell(text: string): string {
  return quoted(guardFormulas(text));
}
