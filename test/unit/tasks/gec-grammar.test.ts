import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { spansFromAligned } from '../../../shared/families/gec/edits.js';
import {
  Bm25Index,
  corpusLanguage,
  corpusPath,
  editHints,
  formatRules,
  GrammarCorpusError,
  type GrammarRule,
  parseGrammarCorpus,
  tokenize,
} from '../../../shared/families/gec/grammar.js';
import { EXAMPLE_DATA, REPO } from '../../helpers.js';

const PROMPTS = join(REPO, 'prompts');
/** The AQUA language codes and the corpus file each one maps to. */
const SHIPPED = { en: 'en', de: 'de', ua: 'uk' } as const;

function corpusText(lang: string): string {
  return readFileSync(join(PROMPTS, corpusPath(lang)), 'utf8');
}

function corpus(lang: string): GrammarRule[] {
  return parseGrammarCorpus(corpusText(lang), corpusPath(lang));
}

function goldRows(file: string): Record<string, string>[] {
  return parse(readFileSync(join(EXAMPLE_DATA, file)), { columns: true, bom: true });
}

describe('shipped grammar corpora', () => {
  it.each(Object.entries(SHIPPED))('%s → prompts/gec/grammar/%s.md exists', (code, file) => {
    expect(corpusPath(code)).toBe(`gec/grammar/${file}.md`);
    expect(existsSync(join(PROMPTS, corpusPath(code)))).toBe(true);
  });

  it.each(Object.keys(SHIPPED))('%s parses into 30–45 rules with unique ids and bodies', (code) => {
    const rules = corpus(code);
    expect(rules.length).toBeGreaterThanOrEqual(30);
    expect(rules.length).toBeLessThanOrEqual(45);
    expect(new Set(rules.map((r) => r.id)).size).toBe(rules.length);
    for (const rule of rules) {
      expect(rule.id).toMatch(/^[\p{Ll}\p{Lo}\p{N}ß]+(?:-[\p{Ll}\p{Lo}\p{N}ß]+)*$/u);
      expect(rule.text.length).toBeGreaterThan(40);
      // Every rule carries at least one wrong → right example.
      expect(rule.text, rule.title).toMatch(/→|->/);
    }
  });

  it.each(Object.keys(SHIPPED))('%s has no curly braces at all (the template checker reads it)', (code) => {
    const text = corpusText(code);
    expect(text).not.toMatch(/[{}]/);
  });

  it.each(Object.keys(SHIPPED))('%s has a rule saying style-only changes are not corrections', (code) => {
    const hits = new Bm25Index(corpus(code)).search('style-only changes are not corrections FP3', 1);
    expect(hits[0]?.rule.text).toContain('FP3');
  });

  it.each([
    ['de', 'comma before subordinate clauses', 'komma-vor-nebensätzen-comma-before-subordinate-clauses'],
    ['ua', 'dash versus hyphen', 'тире-і-дефіс-dash-versus-hyphen'],
    ['en', 'apostrophe in contractions', 'apostrophes-in-contractions-and-plurals'],
  ])('%s answers an English description of the error: "%s"', (code, query, id) => {
    const hits = new Bm25Index(corpus(code)).search(query, 3);
    expect(hits.map((h) => h.rule.id)).toContain(id);
  });
});

describe('retrieval for real AQUA edits (sentence text plus the edit, top 3)', () => {
  const cases = [
    // English
    {
      file: 'gold_en.csv',
      idx: '30',
      edit: '{2011=>2011,}',
      rule: 'comma-after-an-introductory-word-or-phrase',
    },
    {
      file: 'gold_en.csv',
      idx: '38',
      edit: '{Yes=>Yes,}',
      rule: 'comma-after-an-introductory-word-or-phrase',
    },
    {
      file: 'gold_en.csv',
      idx: '10',
      edit: '{nordic=>Nordic}',
      rule: 'capitalisation-of-proper-nouns-and-nationalities',
    },
    {
      file: 'gold_en.csv',
      idx: '69',
      edit: '{watch=>watch,}',
      rule: 'comma-before-a-conjunction-joining-two-clauses',
    },
    {
      file: 'gold_en.csv',
      idx: '150',
      edit: '{=> an}',
      rule: 'missing-article-before-a-singular-countable-noun',
    },
    // German
    {
      file: 'gold_de.csv',
      idx: '100',
      edit: '{dazu das=>dazu, dass}',
      rule: 'das-oder-dass-das-versus-dass',
    },
    {
      file: 'gold_de.csv',
      idx: '100',
      edit: '{denen=>ihnen}',
      rule: 'pronomen-bezug-genus-und-numerus-pronoun-reference',
    },
    {
      file: 'gold_de.csv',
      idx: '4',
      edit: '{Du=>du}',
      rule: 'anredepronomen-du-und-sie-capitalisation-of-du-and-sie',
    },
    {
      file: 'gold_de.csv',
      idx: '37',
      edit: '{nur=>nur,}',
      rule: 'komma-vor-nebensätzen-comma-before-subordinate-clauses',
    },
    {
      file: 'gold_de.csv',
      idx: '31',
      edit: '{ausprobieren.=>Ausprobieren.}',
      rule: 'großschreibung-von-nomen-und-nominalisierungen-capitalisation-of-nouns',
    },
    // Ukrainian
    {
      file: 'gold_ua.csv',
      idx: '82',
      edit: '{те=>те,}',
      rule: 'кома-перед-підрядним-реченням-comma-before-a-subordinate-clause',
    },
    {
      file: 'gold_ua.csv',
      idx: '117',
      edit: '{важко=>важко,}',
      rule: 'кома-перед-підрядним-реченням-comma-before-a-subordinate-clause',
    },
    {
      file: 'gold_ua.csv',
      idx: '52',
      edit: '{гіперкари=>гіперкари,}',
      rule: 'кома-в-означальних-підрядних-реченнях-comma-with-relative-clauses',
    },
    {
      file: 'gold_ua.csv',
      idx: '51',
      edit: '{Звісно=>Звісно,}',
      rule: 'вставні-слова-comma-with-parenthetical-words',
    },
    {
      file: 'gold_ua.csv',
      idx: '27',
      edit: '{Теорія шо=>Теорія, що}',
      rule: 'суржик-і-русизми-surzhyk-and-russianisms',
    },
  ];
  const indexes = new Map<string, Bm25Index>();
  const rows = new Map<string, Record<string, string>[]>();

  it.each(cases)('$file idx $idx: $edit retrieves $rule', ({ file, idx, edit, rule }) => {
    const lang = file.replace(/^gold_|\.csv$/g, '');
    if (!rows.has(file)) rows.set(file, goldRows(file));
    if (!indexes.has(lang)) indexes.set(lang, new Bm25Index(corpus(lang)));
    const row = rows.get(file)!.find((r) => r.idx === idx);
    expect(row, `${file} idx ${idx}`).toBeDefined();
    expect(row!.aligned).toContain(edit);
    const rules = corpus(lang).map((r) => r.id);
    expect(rules).toContain(rule);

    const hits = indexes.get(lang)!.search(`${row!.src} ${edit}`, 3);
    expect(hits.map((h) => h.rule.id)).toContain(rule);
  });

  it('covers at least three rows of every gold file', () => {
    for (const file of ['gold_en.csv', 'gold_de.csv', 'gold_ua.csv']) {
      expect(new Set(cases.filter((c) => c.file === file).map((c) => c.idx)).size).toBeGreaterThanOrEqual(3);
    }
  });
});

describe('parseGrammarCorpus', () => {
  it('reads ## sections, ignores the intro and keeps ### lines in the body', () => {
    const md = [
      '# Corpus',
      'Intro text that is not a rule.',
      '',
      '## Comma before which',
      'Use a comma before a non-restrictive which.',
      '- The car which I sold → The car, which I sold,',
      '',
      '## Articles ##',
      '### Note',
      'Use an before a vowel sound.',
    ].join('\r\n');
    expect(parseGrammarCorpus(md, 'test.md')).toEqual([
      {
        id: 'comma-before-which',
        title: 'Comma before which',
        text: 'Use a comma before a non-restrictive which.\n- The car which I sold → The car, which I sold,',
      },
      { id: 'articles', title: 'Articles', text: '### Note\nUse an before a vowel sound.' },
    ]);
  });

  it('slugs Unicode titles and numbers duplicates -2, -3', () => {
    const md =
      '## Кома перед що\na\n## Komma: dass / Straße!\nb\n## Кома перед що\nc\n## кома — перед ЩО\nd\n';
    expect(parseGrammarCorpus(md, 'x').map((r) => r.id)).toEqual([
      'кома-перед-що',
      'komma-dass-straße',
      'кома-перед-що-2',
      'кома-перед-що-3',
    ]);
  });

  it('throws GrammarCorpusError naming the source when there are no rules', () => {
    expect(() => parseGrammarCorpus('# Only a title\nno sections here', 'prompts/gec/grammar/xx.md')).toThrow(
      GrammarCorpusError,
    );
    expect(() => parseGrammarCorpus('', 'prompts/gec/grammar/xx.md')).toThrow(
      /prompts\/gec\/grammar\/xx\.md/,
    );
  });

  it('throws GrammarCorpusError naming the source and title for an empty body', () => {
    const md = '## Good rule\nSome text.\n## Empty rule\n   \n\n## Next\nMore.';
    expect(() => parseGrammarCorpus(md, 'de.md')).toThrow(GrammarCorpusError);
    expect(() => parseGrammarCorpus(md, 'de.md')).toThrow(/de\.md.*"Empty rule"/);
    expect(() => parseGrammarCorpus('## Last\n', 'de.md')).toThrow(/"Last"/);
  });
});

describe('tokenize', () => {
  it('lower-cases, drops punctuation and keeps digits', () => {
    expect(tokenize('Hello, World! In 2011 (really?) -- yes.')).toEqual([
      'hello',
      'world',
      'in',
      '2011',
      'really',
      'yes',
    ]);
    expect(tokenize('{old=>new} → ;:')).toEqual(['old', 'new']);
    expect(tokenize('')).toEqual([]);
  });

  it('keeps German umlauts and ß and case-folds them', () => {
    expect(tokenize('Größe, ÄRGER über Straße; dass')).toEqual(['größe', 'ärger', 'über', 'straße', 'dass']);
  });

  it("keeps Ukrainian apostrophes inside words and normalises ’ and ʼ to '", () => {
    expect(tokenize("М'ясо, м’ясо і мʼясо")).toEqual(["м'ясо", "м'ясо", 'і', "м'ясо"]);
    expect(tokenize('П’ять зв’язків.')).toEqual(["п'ять", "зв'язків"]);
  });

  it('keeps English contractions but drops quote marks around words', () => {
    expect(tokenize("It's the MPs’ 'Bob' don't")).toEqual(["it's", 'the', 'mps', 'bob', "don't"]);
    expect(tokenize("rock 'n' roll")).toEqual(['rock', 'n', 'roll']);
  });

  it('normalises to NFC so composed and decomposed letters match', () => {
    const decomposed = 'Cafe\u0301 Gro\u0308ße й'.replace('й', '\u0438\u0306');
    expect(tokenize(decomposed)).toEqual(['café', 'größe', 'й']);
  });
});

describe('Bm25Index', () => {
  const rules: GrammarRule[] = [
    { id: 'commas', title: 'Commas', text: 'Put a comma before which and a comma after however.' },
    { id: 'articles', title: 'Articles', text: 'Use an before a vowel sound and a before a consonant.' },
    {
      id: 'capitals',
      title: 'Capitals',
      text: 'Start a sentence with a capital letter and capitalise names.',
    },
  ];
  const index = new Bm25Index(rules);

  it('ranks the rule containing the query term first', () => {
    expect(index.search('where does the comma go')[0]?.rule.id).toBe('commas');
    expect(index.search('vowel')[0]?.rule.id).toBe('articles');
    expect(index.search('CAPITAL letter')[0]?.rule.id).toBe('capitals');
  });

  it('counts the title as well as the text', () => {
    expect(index.search('articles').map((h) => h.rule.id)).toEqual(['articles']);
  });

  it('weights a rare term above a common one (idf)', () => {
    const docs: GrammarRule[] = [
      { id: 'one', title: 'one', text: 'common rare' },
      { id: 'two', title: 'two', text: 'common other' },
      { id: 'three', title: 'three', text: 'common third' },
    ];
    const bm25 = new Bm25Index(docs);
    // Equal lengths and tf = 1, so a one-term score is exactly its idf.
    expect(bm25.search('rare')[0]!.score).toBeCloseTo(Math.log(1 + 2.5 / 1.5), 12);
    expect(bm25.search('common')[0]!.score).toBeCloseTo(Math.log(1 + 0.5 / 3.5), 12);
    expect(bm25.search('rare')[0]!.score).toBeGreaterThan(bm25.search('common')[0]!.score);
    // Doc one matches both terms, but the rare term puts it far ahead of the others.
    const hits = bm25.search('common rare', 3);
    expect(hits.map((h) => h.rule.id)).toEqual(['one', 'two', 'three']);
    expect(hits[0]!.score).toBeGreaterThan(3 * hits[1]!.score);
  });

  it('breaks ties by corpus order', () => {
    const bm25 = new Bm25Index([
      { id: 'b', title: 'x', text: 'shared' },
      { id: 'a', title: 'y', text: 'shared' },
      { id: 'c', title: 'z', text: 'shared' },
    ]);
    expect(bm25.search('shared').map((h) => h.rule.id)).toEqual(['b', 'a', 'c']);
  });

  it('returns only rules scoring above zero', () => {
    expect(index.search('zebra quantum')).toEqual([]);
    expect(index.search('')).toEqual([]);
    expect(index.search('vowel', 3)).toHaveLength(1);
    for (const hit of index.search('a the comma capital', 3)) expect(hit.score).toBeGreaterThan(0);
  });

  it('limits the number of hits to k (default 3)', () => {
    const query = 'comma vowel capital before a';
    expect(index.search(query)).toHaveLength(3);
    expect(index.search(query, 2)).toHaveLength(2);
    expect(index.search(query, 1)).toHaveLength(1);
    expect(index.search(query, 0)).toEqual([]);
    expect(new Bm25Index([]).search(query)).toEqual([]);
  });

  it('normalises by document length unless b = 0', () => {
    const docs: GrammarRule[] = [
      { id: 'short', title: 's', text: 'term' },
      { id: 'long', title: 'l', text: 'term and many more words that make this document long' },
    ];
    const [first, second] = new Bm25Index(docs).search('term', 2);
    expect(first!.rule.id).toBe('short');
    expect(first!.score).toBeGreaterThan(second!.score);
    const flat = new Bm25Index(docs, { b: 0 }).search('term', 2);
    expect(flat[0]!.score).toBeCloseTo(flat[1]!.score, 12);
  });

  it('matches Ukrainian words whatever apostrophe the query uses', () => {
    const bm25 = new Bm25Index([
      { id: 'apostrophe', title: 'Апостроф', text: "Пишемо м'ясо і п'ять." },
      { id: 'other', title: 'Інше', text: 'Кома перед що.' },
    ]);
    expect(bm25.search('мʼясо')[0]?.rule.id).toBe('apostrophe');
    expect(bm25.search('м’ясо')[0]?.rule.id).toBe('apostrophe');
  });
});

describe('corpusLanguage and corpusPath', () => {
  it.each([
    ['ua', 'uk'],
    [' UA ', 'uk'],
    ['uk', 'uk'],
    ['uk-UA', 'uk'],
    ['en', 'en'],
    ['en-US', 'en'],
    ['en_GB', 'en'],
    ['EN', 'en'],
    ['de', 'de'],
    ['de-AT', 'de'],
    ['German', 'de'],
    ['Ukrainian', 'uk'],
  ])('%j → %s', (code, expected) => {
    expect(corpusLanguage(code)).toBe(expected);
  });

  it('builds the prompt path of a corpus', () => {
    expect(corpusPath('ua')).toBe('gec/grammar/uk.md');
    expect(corpusPath('en-US')).toBe('gec/grammar/en.md');
    expect(corpusPath('de')).toBe('gec/grammar/de.md');
  });
});

describe('formatRules', () => {
  const rule = (id: string, text: string): GrammarRule => ({ id, title: `Rule ${id}`, text });

  it('numbers the hits and puts each rule on one line', () => {
    const out = formatRules(
      [{ rule: rule('a', 'First line.\n- x → y') }, { rule: rule('b', 'Second\t\trule.') }],
      'English',
    );
    expect(out).toBe('1. Rule a: First line. - x → y\n2. Rule b: Second rule.');
  });

  it('cuts long rule text at about 300 characters', () => {
    const long = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    const out = formatRules([{ rule: rule('a', long) }], 'English');
    const text = out.slice('1. Rule a: '.length);
    expect(text.length).toBeLessThanOrEqual(300);
    expect(text.length).toBeGreaterThan(250);
    expect(text.endsWith('…')).toBe(true);
    expect(long.startsWith(text.slice(0, -1))).toBe(true);
  });

  it('says so when nothing matched', () => {
    expect(formatRules([], 'German')).toBe('No matching grammar rule in the German corpus.');
  });

  it('renders real search hits', () => {
    const index = new Bm25Index(corpus('de'));
    const out = formatRules(index.search('Ich hoffe das es klappt, dass', 2), 'German');
    expect(out.split('\n')).toHaveLength(2);
    expect(out).toMatch(/^1\. das oder dass \(das versus dass\): /);
  });
});

describe('editHints', () => {
  it('names the punctuation an edit changes and a case-only change', () => {
    expect(editHints([{ old: '-', new: '—' }])).toMatch(/dash/);
    expect(editHints([{ old: 'Yes', new: 'Yes,' }])).toMatch(/^comma Komma кома$/);
    expect(editHints([{ old: 'nordic', new: 'Nordic' }])).toMatch(/capitalisation/);
    expect(editHints([{ old: 'go', new: 'goes' }])).toBe('');
  });

  it('lets a dash-only edit find the dash rule (gold_ua idx 14: {-=>—})', () => {
    const row = goldRows('gold_ua.csv').find((r) => r.idx === '14')!;
    const index = new Bm25Index(corpus('ua'));
    const ids = (query: string) => index.search(query, 3).map((hit) => hit.rule.title);
    const withHints = ids(`${row.src} {-=>—} ${editHints([{ old: '-', new: '—' }])}`);
    expect(withHints.some((title) => /тире|dash/i.test(title))).toBe(true);
  });
});

describe('retrieval of punctuation and case edits across the gold files', () => {
  /** Single-span edits that change only commas, only dashes, or only letter case, and the rule titles that answer them. */
  const KINDS = {
    comma: {
      is: (o: string, n: string) => (o + n).includes(',') && o.replaceAll(',', '') === n.replaceAll(',', ''),
      title: /comma|komma|кома|коми/i,
    },
    dash: {
      is: (o: string, n: string) =>
        /[-–—]/.test(o + n) && o.replace(/[-–—\s]/g, '') === n.replace(/[-–—\s]/g, ''),
      title: /dash|hyphen|strich|тире|дефіс/i,
    },
    case: {
      is: (o: string, n: string) => o !== n && o.toLowerCase() === n.toLowerCase(),
      title: /capital|groß|klein|велик/i,
    },
  };

  it('finds the rule in the top 3 for every such edit with the edit hints, and for fewer without', () => {
    const tally = { n: 0, plain: 0, hinted: 0 };
    for (const [file, code] of Object.entries(SHIPPED)) {
      const index = new Bm25Index(corpus(code));
      for (const row of goldRows(`gold_${file}.csv`)) {
        const spans = spansFromAligned(row.aligned ?? '');
        const kind = Object.values(KINDS).find(
          (k) => spans.length === 1 && k.is(spans[0]!.old, spans[0]!.new),
        );
        if (!kind) continue;
        const query = `${row.src} {${spans[0]!.old}=>${spans[0]!.new}}`;
        const found = (q: string) => index.search(q, 3).some((hit) => kind.title.test(hit.rule.title));
        tally.n += 1;
        if (found(query)) tally.plain += 1;
        if (found(`${query} ${editHints(spans)}`)) tally.hinted += 1;
      }
    }
    expect(tally.n).toBeGreaterThanOrEqual(25);
    expect(tally.hinted).toBe(tally.n);
    expect(tally.plain).toBeLessThan(tally.n);
  });
});
