/**
 * The formula guard of every CSV the product writes, and its exact inverse for the CSV it reads
 * back (the labelling page's export, given as `dataset.goldFile`): a spreadsheet opening the file
 * runs no part of any cell as a formula, and an id such as `=1+1` still merges with its item.
 *
 * A cell starting with = + - @ tab or CR, or their full-width forms (＝ ＋ － ＠, which some
 * spreadsheets read as the ASCII ones), is prefixed with an apostrophe (OWASP's CSV injection
 * guidance). So is every fragment after a `,`, `;`, tab or line break inside the cell that
 * starts with one of = + - @ (a bare signed number excepted: it is read as a number, never run,
 * and JSON in a cell stays JSON): a spreadsheet splitting on `;` or tab (the separator of many
 * locales), or on `,` without honouring quotes, reads each fragment as a cell, and prefixing the
 * fragment is what keeps that cell text (prefixing the whole cell would leave the fragment a
 * formula). Apostrophes already before a formula start count as part of it, so that the guard
 * adds exactly one and {@link unguardFormulas} takes exactly one away.
 */

/** The characters that start a formula anywhere: = + - @ and their full-width forms. */
const FORMULA = '=+\\-@\\uFF1D\\uFF0B\\uFF0D\\uFF20';

/** A cell's own start: a formula character, tab or CR, after any apostrophes. */
const CELL_START = new RegExp(`^'*[${FORMULA}\\t\\r]`);
const GUARDED_START = new RegExp(`^'(?='*[${FORMULA}\\t\\r])`);

/** A separator a spreadsheet may split on, then spaces, before a fragment starting a formula. */
const FRAGMENT = new RegExp(`([,;\\t\\r\\n] *)(?='*[${FORMULA}])`, 'g');
const GUARDED_FRAGMENT = new RegExp(`([,;\\t\\r\\n] *)'(?='*[${FORMULA}])`, 'g');

/** A signed plain number up to the next separator (`-2`, `+0.5e3`, `-3]` closing a JSON array). */
const PLAIN_NUMBER = /^[+-](?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[\]}]*(?:[,;\t\r\n]|$)/;

/** `text` with an apostrophe before its start and before each fragment that would be a formula. */
export function guardFormulas(text: string): string {
  const inner = text.replace(FRAGMENT, (separator: string, _spaces: string, at: number) =>
    PLAIN_NUMBER.test(text.slice(at + separator.length)) ? separator : `${separator}'`,
  );
  return CELL_START.test(inner) ? `'${inner}` : inner;
}

/** The text {@link guardFormulas} was given: each apostrophe it added taken away. */
export function unguardFormulas(text: string): string {
  return text.replace(GUARDED_START, '').replace(GUARDED_FRAGMENT, '$1');
}
