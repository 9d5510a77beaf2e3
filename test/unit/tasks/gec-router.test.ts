import { createReadStream } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type EditSpan, editSpans, spansFromAligned } from '../../../shared/families/gec/edits.js';
import {
  LONG_REWRITE_TOKENS,
  LOW_TRUST_LABELS,
  RISK_FLAGS,
  type RiskFlag,
  riskFlags,
  spanFlags,
} from '../../../shared/families/gec/router.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import { EXAMPLE_DATA } from '../../helpers.js';

/** The AQUA gold files that ship with the repository (examples/data, with their attribution). */
const AQUA = EXAMPLE_DATA;

/**
 * `aligned` cells copied verbatim from the AQUA gold files, keyed `<lang> <idx>` for
 * gold_<lang>.csv, column `idx`. The first test checks each one against its file.
 */
const ALIGNED = {
  'en 0':
    'They{ have to=> must} deal with extraordinary circumstances; when we, the people, are scared and afraid, they must not hesitate.',
  'en 1':
    "The profit margin would not significantly increase if they paid their executives nothing (which, keep in mind, they *can't do*).",
  'en 7': '{This=>This is not a subsidy; this} is why you need to read up on the subject.',
  'en 8': 'There are direct flights {out of=>available from} JFK, {EWR=>EWR,} and PHL.',
  'en 23':
    '{Made=>I made} a spontaneous decision{ (first=> (the first} time ever) to {go to=>visit the} Bahamas tomorrow for {5=>five} nights.',
  'en 27':
    "‘I’ve earned £575 in six months’: The ex-Tory MPs who can’t get a {job=>job.} > I'm {pretty damn sure=>fairly confident} UK school kids will {have=>encounter} a{ big giant problem=> significant issue} with that.",
  'en 30':
    'In addition, in {2011=>2011,} News International received information that information was being passed covertly to Lord Watson from within News International.',
  'en 31':
    'Robot packers and AI cameras: UK retail embraces automation to cut staff costs | Retail industry What{ about=> will be the fate of} all the people who are going to end up jobless?',
  'en 37':
    "{Pattern to words with cases =>}While there are plenty of subcategories, it's not worth getting lost in them at this point.",
  'en 58':
    'There are more people who need to pay rent and eat than{=> there are} jobs {you=>that} can {actually "integrate"=>be "integrated"} into {your=>one’s} life.',
  'en 70':
    'Making government policy based on a group of people protesting is a dangerous and poorly{ thought out=> thought-out} strategy.',
  'en 78': 'Anything {less=>less,} and I might as well greet people at Walmart.',
  'en 91':
    'Has anyone {travelled=>traveled} to {mexico with=>Mexico using a} Schengen visa and{=> an} Indian passport?',
  'en 124':
    "I'm afraid Brits aren't to blame; I know some of you are {chomping at the bit=>eager} to {showcase=>display} your self-loathing.",
  'en 152':
    "If you don't believe me, try living off Skittles for {2=>two} weeks and let me know how that goes.",
  'en 191':
    'Their birth rate will rise again when their aging population begins to die {off (freeing=>off, which will free} up homes and {jobs etc).=>jobs, etc.}',
  'en 192': 'Jag heter Sten.I agree, Stone {And=>and} Sten share the same root after all.',
  'de 11': 'Für {deutsche=>Deutsche} im Ausland: Vergesst nicht, eure Briefwahlunterlagen zu beantragen.',
  'de 12':
    'Ich {verstehe=>verstehe,} wenn Menschen eine andere Meinung {haben,=>haben;} meine oben genannten Punkte sind jedoch alle das Gedankengut der {Grünen=>Grünen.}',
  'de 14':
    'An alle: Wie können wir unseren Wohlstand {aufrecht erhalten, wenn CDU/FDP/Af.=>aufrechterhalten, wenn CDU, FDP und Af.}',
  'de 33':
    'Außerdem, seien wir {Mal=>mal} ehrlich: {jetzt=>Jetzt} hast du zwar das Budget für einen {gaming PC,=>Gaming-PC,} aber nicht mehr die Zeit.',
  'de 82':
    'Hier {gibts=>gibt es} keine (essbare, ganze) Pizza mehr unter {10€. (Margherita)=>10 € (Margherita).}',
  'de 118':
    'Dabei geht es nicht nur um Kaffee, sondern um etwas Grundsätzliches.{ > „Das=> "Das} Kulturgut Kaffee darf nicht auf diese Weise verramscht{ werden“Diggi,=> werden." Diggi,} ihr seid {Tschibo.=>Tchibo.}',
  'de 129':
    '{Ich_iel Mein Gesicht,=>So sieht mein Gesicht aus,} wenn der Berliner nicht aus Berlin und der Amerikaner nicht aus Amerika{ ist @@=> kommt.}',
  'de 157':
    'Digitales Desaster: Woran Behörden scheitern {>Man=>Man} hat sich den Art. 91c GG mit Geld {erkauft,=>erkauft;} man könnte sich weitere Befugnisse mit Geld erkaufen.',
  'de 191':
    'Robert Habeck: Wieso Kassenbeiträge auf Kapitalerträge sinnvoll wären – aber nicht die beste Idee > ..könnte man halt auch darüber diskutieren.. da sind wir dann an dem Punkt der Ausgestaltung des {Artikels.Könnte man diskutieren, ginge dann m.=>Artikels.}',
  'ua 17':
    'Мінусом{ хіба вважати=> є} відсутність відділень, але це спірне питання, {бо=>адже} все є в {додатку)=>додатку.}',
  'ua 62':
    'Я{ кажуспеціально=> кажу спеціально} про комфорт, бо з тими {батьками=>батьками,} яким було потрібне вирішення, коли я{ щепрацював,=> ще працював,} у мене зазвичай була чудова комунікація.',
  'ua 133':
    'Просто люди {приємні)А=>приємні) А} мій рекорд чайових за один робочий день {-=>—} це {5538грн.=>5538 грн.}',
  'ua 180':
    'За {6=>шість} місяців {зрозуміли=>зрозуміли,} що там {краще=>краще,} і вже виїхали з кінцями (у 2009{=> році} в Україні була криза, і наші доходи суттєво скоротилися).',
  'ua 213': 'А, ну і не пропонуй{ в -10=>} гуляти по парку{=> в -10.}',
} as const;
type RowKey = keyof typeof ALIGNED;

/** `gold_en.csv idx 152`, as test names quote a row. */
function cite(key: RowKey): string {
  const [lang, idx] = key.split(' ');
  return `gold_${lang}.csv idx ${idx}`;
}

function spans(key: RowKey): EditSpan[] {
  return spansFromAligned(ALIGNED[key]);
}

function fires(flag: RiskFlag, s: readonly EditSpan[]): boolean {
  return spanFlags(s).includes(flag);
}

/** [row, why, fires?] for one flag. */
type RowCase = [key: RowKey, why: string, expected: boolean];

function rowCases(cases: RowCase[]): [string, RowKey, boolean][] {
  return cases.map(([key, why, expected]) => [
    `${cite(key)}: ${why} → ${expected ? 'fires' : 'does not fire'}`,
    key,
    expected,
  ]);
}

async function alignedColumn(file: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const row of readRows(createReadStream(resolve(AQUA, file)), 'csv')) {
    if (row.record) out.set(row.record.idx!, row.record.aligned!);
  }
  return out;
}

describe('router fixtures', () => {
  it('are verbatim `aligned` cells of the AQUA gold files', async () => {
    const columns: Record<string, Map<string, string>> = {
      en: await alignedColumn('gold_en.csv'),
      de: await alignedColumn('gold_de.csv'),
      ua: await alignedColumn('gold_ua.csv'),
    };
    for (const key of Object.keys(ALIGNED) as RowKey[]) {
      const [lang, idx] = key.split(' ');
      expect(columns[lang!]!.get(idx!), cite(key)).toBe(ALIGNED[key]);
    }
  });
});

describe('number_change', () => {
  it.each(
    rowCases([
      ['en 152', '{2=>two}', true],
      ['ua 180', '{6=>шість} among three punctuation/insertion spans', true],
      ['en 23', '{5=>five} in a four-span rewrite', true],
      ['ua 213', 'a number moved: { в -10=>} … {=> в -10.}; each span is compared on its own', true],
      ['en 30', '{2011=>2011,} keeps its digits', false],
      ['ua 133', '{5538грн.=>5538 грн.} only spaces the digits from the unit', false],
      ['de 82', '{10€. (Margherita)=>10 € (Margherita).} keeps 10', false],
      ['en 0', 'no digits at all', false],
    ]),
  )('%s', (_name, key, expected) => {
    expect(fires('number_change', spans(key))).toBe(expected);
  });

  it('compares digit runs, so regrouping a number counts as a change', () => {
    expect(fires('number_change', [{ old: '1,000 people', new: '1000 people' }])).toBe(true);
    expect(fires('number_change', [{ old: '3.5 kg', new: '3.5kg' }])).toBe(false);
  });
});

describe('proper_noun_change', () => {
  it.each(
    rowCases([
      ['en 91', '{mexico with=>Mexico using a}', true],
      ['de 118', '{Tschibo.=>Tchibo.}', true],
      ['de 11', '{deutsche=>Deutsche} (a German noun capitalised)', true],
      ['de 33', 'a capitalisation fix {jetzt=>Jetzt} after a colon, also fires (literal reading)', true],
      ['en 192', 'a decapitalisation {And=>and}', true],
      ['en 23', 'the sentence-initial word replaced: {Made=>I made}', true],
      ['en 37', 'a capitalised word deleted: {Pattern to words with cases =>}', true],
      ['de 14', 'CDU, FDP, Af. kept in order while the span is rewritten', false],
      ['en 7', '{This=>This is not a subsidy; this}: This kept, the added this is lower case', false],
      ['en 0', 'no capitalised tokens in the span', false],
    ]),
  )('%s', (_name, key, expected) => {
    expect(fires('proper_noun_change', spans(key))).toBe(expected);
  });
});

describe('punctuation_only', () => {
  it.each(
    rowCases([
      ['en 78', 'a comma inserted: {less=>less,}', true],
      ['en 70', 'a hyphen: { thought out=> thought-out}', true],
      ['de 12', 'all three spans are comma/semicolon/period edits', true],
      ['ua 62', 'two word splits (whitespace) and a comma', true],
      ['ua 133', 'spacing, a dash swap and a space before a unit', true],
      ['en 8', 'one span is lexical ({out of=>available from}) beside {EWR=>EWR,}', false],
      ['en 192', 'a case change is not punctuation: {And=>and}', false],
      ['en 0', 'a word change', false],
    ]),
  )('%s', (_name, key, expected) => {
    expect(fires('punctuation_only', spans(key))).toBe(expected);
  });

  it('needs at least one span: an unedited row (gold_en.csv idx 1, TN) is not punctuation-only', () => {
    expect(spans('en 1')).toEqual([]);
    expect(spanFlags(spans('en 1'))).toEqual([]);
  });
});

describe('structured_token_change', () => {
  it.each(
    rowCases([
      ['en 191', 'brackets dropped: {off (freeing=>…} {jobs etc).=>jobs, etc.}', true],
      ['de 129', 'an @ token dropped: { ist @@=> kommt.}', true],
      ['de 157', 'a > quote marker dropped: {>Man=>Man}', true],
      ['ua 17', 'a closing bracket turned into a period: {додатку)=>додатку.}', true],
      ['de 82', '(Margherita) keeps its brackets', false],
      ['ua 133', '{приємні)А=>приємні) А} keeps its bracket', false],
      ['en 0', 'no structured tokens', false],
    ]),
  )('%s', (_name, key, expected) => {
    expect(fires('structured_token_change', spans(key))).toBe(expected);
  });

  // The gold files hold no URL, no hashtag and no e-mail address (only de 129's `@@`), so
  // these cases are synthetic, written as the `aligned` column would hold them.
  it.each([
    ['a URL scheme change', 'Docs at {http://example.com/gec=>https://example.com/gec} today.', true],
    ['a www. host change', 'See {www.example.com=>www.example.org} for more.', true],
    ['a hashtag change', 'Tagged {#gec2024=>#GEC2024} again.', true],
    ['a mention change', 'Thanks {@anna=>@maria} for this.', true],
    ['an e-mail address spelled out', 'Write to {anna@example.com=>anna at example dot com} now.', true],
    ['a URL dropped from brackets', 'Read it {(https://example.com)=>online}.', true],
    [
      'a period after a URL (sentence punctuation, not the URL)',
      'Go to {https://example.com=>https://example.com.}',
      false,
    ],
    ['the words inside brackets change', 'It was {(see below)=>(see above)}.', false],
  ])('synthetic: %s → %s', (_name, aligned, expected) => {
    expect(fires('structured_token_change', spansFromAligned(aligned))).toBe(expected);
  });
});

describe('long_rewrite_risk', () => {
  it('fires at LONG_REWRITE_TOKENS = 6', () => {
    expect(LONG_REWRITE_TOKENS).toBe(6);
  });

  it.each(
    rowCases([
      ['en 7', 'one span 1 → 6 tokens: |6−1| + 1 = 6, exactly the threshold', true],
      ['de 191', 'a deletion 6 → 1 tokens: |1−6| + 1 = 6', true],
      ['de 14', 'one span 4 → 6 tokens = 6', true],
      ['en 58', 'four spans of 2 + 1 + 2 + 1 = 6, none long alone', true],
      ['en 27', 'four spans of 1 + 3 + 1 + 3 = 8', true],
      ['en 31', 'one span 1 → 5 tokens = 5, one short', false],
      ['en 37', 'a deletion of 5 tokens = 5', false],
      ['en 124', 'two spans of 4 + 1 = 5', false],
      ['en 0', 'a short edit {have to=>must}: 2 tokens', false],
    ]),
  )('%s', (_name, key, expected) => {
    expect(fires('long_rewrite_risk', spans(key))).toBe(expected);
  });

  it('counts each span as max(len(old), len(new)) whitespace tokens', () => {
    expect(fires('long_rewrite_risk', [{ old: 'a b c', new: 'x y z' }])).toBe(false); // 3
    expect(fires('long_rewrite_risk', [{ old: 'a b c', new: 'x y z w v u' }])).toBe(true); // 6
    expect(fires('long_rewrite_risk', [{ old: '  a   b  ', new: '' }])).toBe(false); // 2, runs of spaces are one gap
  });
});

describe('spanFlags', () => {
  // Every fixture row's full flag list: RISK_FLAGS order, each at most once, never low_trust_label.
  const expected: Record<RowKey, RiskFlag[]> = {
    'en 0': [],
    'en 1': [],
    'en 7': ['long_rewrite_risk'],
    'en 8': [],
    'en 23': ['number_change', 'proper_noun_change', 'long_rewrite_risk'],
    'en 27': ['long_rewrite_risk'],
    'en 30': ['punctuation_only'],
    'en 31': [],
    'en 37': ['proper_noun_change'],
    'en 58': ['long_rewrite_risk'],
    'en 70': ['punctuation_only'],
    'en 78': ['punctuation_only'],
    'en 91': ['proper_noun_change'],
    'en 124': [],
    'en 152': ['number_change'],
    'en 191': ['structured_token_change', 'long_rewrite_risk'],
    'en 192': ['proper_noun_change'],
    'de 11': ['proper_noun_change'],
    'de 12': ['punctuation_only'],
    'de 14': ['long_rewrite_risk'],
    'de 33': ['proper_noun_change'],
    'de 82': [],
    'de 118': ['proper_noun_change', 'structured_token_change'],
    'de 129': ['proper_noun_change', 'structured_token_change', 'long_rewrite_risk'],
    'de 157': ['structured_token_change'],
    'de 191': ['proper_noun_change', 'long_rewrite_risk'],
    'ua 17': ['structured_token_change'],
    'ua 62': ['punctuation_only'],
    'ua 133': ['punctuation_only'],
    'ua 180': ['number_change'],
    'ua 213': ['number_change'],
  };

  it.each((Object.keys(ALIGNED) as RowKey[]).map((key) => [cite(key), key] as const))('%s', (_name, key) => {
    expect(spanFlags(spans(key))).toEqual(expected[key]);
  });

  it('gives no flags for no spans', () => {
    expect(spanFlags([])).toEqual([]);
  });
});

describe('riskFlags', () => {
  it('lists the flags and the low-trust labels of SPEC §1.1', () => {
    expect(RISK_FLAGS).toEqual([
      'number_change',
      'proper_noun_change',
      'punctuation_only',
      'structured_token_change',
      'long_rewrite_risk',
      'low_trust_label',
    ]);
    expect(LOW_TRUST_LABELS).toEqual(['FP1', 'FP2', 'Error']);
  });

  it.each(['FP1', 'FP2', 'Error'])('adds low_trust_label when the small model said %s', (label) => {
    expect(riskFlags(spans('en 152'), label)).toEqual(['number_change', 'low_trust_label']);
    expect(riskFlags(spans('en 0'), label)).toEqual(['low_trust_label']);
  });

  it.each(['TP', 'FP3', 'TN', 'FN', 'fp1', ''])('does not add it for %j', (label) => {
    expect(riskFlags(spans('en 23'), label)).toEqual(spanFlags(spans('en 23')));
    expect(riskFlags(spans('en 0'), label)).toEqual([]);
  });
});

describe('whole-pair fallback: editSpans(src, tgt) without aligned', () => {
  it('gold_en.csv idx 152: the differing word becomes the span → number_change', () => {
    const src = "If you don't believe me, try living off Skittles for 2 weeks and let me know how that goes.";
    const tgt =
      "If you don't believe me, try living off Skittles for two weeks and let me know how that goes.";
    const pair = editSpans(src, tgt);
    expect(pair).toEqual([{ old: '2', new: 'two' }]);
    expect(spanFlags(pair)).toEqual(spanFlags(spans('en 152')));
    expect(riskFlags(pair, 'FP2')).toEqual(['number_change', 'low_trust_label']);
  });

  it('gold_en.csv idx 78: an inserted comma widens to its word → punctuation_only', () => {
    const src = 'Anything less and I might as well greet people at Walmart.';
    const tgt = 'Anything less, and I might as well greet people at Walmart.';
    expect(editSpans(src, tgt, '')).toEqual([{ old: 'less', new: 'less,' }]);
    expect(spanFlags(editSpans(src, tgt))).toEqual(['punctuation_only']);
  });

  it('gold_de.csv idx 129: edits at both ends make the whole pair one span', () => {
    const src =
      'Ich_iel Mein Gesicht, wenn der Berliner nicht aus Berlin und der Amerikaner nicht aus Amerika ist @@';
    const tgt =
      'So sieht mein Gesicht aus, wenn der Berliner nicht aus Berlin und der Amerikaner nicht aus Amerika kommt.';
    expect(editSpans(src, tgt)).toEqual([{ old: src, new: tgt }]);
    expect(spanFlags(editSpans(src, tgt))).toEqual([
      'proper_noun_change',
      'structured_token_change',
      'long_rewrite_risk',
    ]);
  });

  it('gold_en.csv idx 1 (TN): src equals tgt and aligned has no span → no spans, no flags', () => {
    const src = ALIGNED['en 1']; // this row's src, tgt and aligned are the same text
    const none = editSpans(src, src, ALIGNED['en 1']);
    expect(none).toEqual([]);
    expect(spanFlags(none)).toEqual([]);
    expect(riskFlags(none, 'TP')).toEqual([]);
  });
});
