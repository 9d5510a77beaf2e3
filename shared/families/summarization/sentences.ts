/**
 * Sentence splitting that survives legal text: citations (`347 U.S. 483`, `42 U.S.C. § 1983`,
 * `F.3d`), case names (`Brown v. Board`), docket numbers (`No. 12-345`), titles and initials
 * (`Dr.`, `J. Roberts`) and Latin abbreviations (`e.g.`, `cf.`, `et al.`). A period ends a
 * sentence only when the next word starts like a sentence and the word before is not one of
 * these. Pure.
 */

/** Words (lower case, without their final period) after which a period does not end a sentence. */
const ABBREVIATIONS = new Set([
  // case names, citations and reporters
  'v',
  'vs',
  'no',
  'nos',
  'u.s',
  'u.s.c',
  'c.f.r',
  'f',
  'f.2d',
  'f.3d',
  'f.4th',
  'f.supp',
  'supp',
  's.ct',
  'ct',
  'l.ed',
  'cir',
  'app',
  'rev',
  'stat',
  'ann',
  'cl',
  'art',
  'sec',
  'ch',
  'para',
  'pp',
  'p',
  'vol',
  'ed',
  'n',
  'id',
  'ibid',
  // courts and places
  'cal',
  'n.y',
  'tex',
  'fla',
  'mass',
  'ill',
  'pa',
  'd.c',
  'n.d',
  's.d',
  'e.d',
  'w.d',
  'm.d',
  'dist',
  // titles and companies
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'jr',
  'sr',
  'st',
  'hon',
  'gen',
  'gov',
  'sen',
  'rep',
  'inc',
  'corp',
  'co',
  'ltd',
  'llc',
  'assn',
  'dept',
  // latin and common
  'e.g',
  'i.e',
  'cf',
  'al',
  'etc',
  'viz',
  'approx',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
]);

/** Sentence-ending punctuation, closing quotes or brackets, then space, then a sentence start. */
const BOUNDARY = /([.!?])(["'”’)\]]*)\s+(?=["'“‘([]?[\p{Lu}\p{N}§])/gu;

function endsWithAbbreviation(before: string): boolean {
  const word = /(\S+)$/.exec(before)?.[1] ?? '';
  const bare = word.replace(/^["'“‘([]+/, '').toLowerCase();
  if (ABBREVIATIONS.has(bare)) return true;
  // A single letter is an initial (J. Roberts) or part of an abbreviation (U.S.).
  if (/^\p{L}$/u.test(bare)) return true;
  // Dotted abbreviations not listed (N.L.R.B., S.E.C.).
  return /^(\p{L}\.)+\p{L}$/u.test(bare);
}

/** The sentences of a text, trimmed, none empty. */
export function splitSentences(text: string): string[] {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat === '') return [];
  const sentences: string[] = [];
  let start = 0;
  for (const m of flat.matchAll(BOUNDARY)) {
    const end = m.index! + m[1]!.length + m[2]!.length;
    if (m[1] === '.' && endsWithAbbreviation(flat.slice(start, m.index!))) continue;
    sentences.push(flat.slice(start, end).trim());
    start = m.index! + m[0].length;
  }
  const rest = flat.slice(start).trim();
  if (rest !== '') sentences.push(rest);
  return sentences;
}
