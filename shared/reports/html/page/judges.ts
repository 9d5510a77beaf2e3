/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The judges' own reliability on the run page: a panel of judges (report.json `panel`) as its
 * own section, and a scorer's self-preference (`scores.<scorer>.bias.selfPreference`) as a
 * figure among its charts.
 */
import type { MetricValue, PanelSummary, SelfPreferenceBias } from '../../../model/report.js';
import { ciBar, ciText, h, num, pValue, section, signed, table } from './dom.js';

/** A metric's value, interval, bar on [min, max] and n, as table cells. */
function cells(key: string, m: MetricValue, min: number, max: number): (HTMLElement | string)[] {
  return [
    h('span', { class: 'figure-value', 'data-metric': key }, num(m.value)),
    ciText(m.ci),
    ciBar(m.value, m.ci ?? null, min, max),
    String(m.n),
  ];
}

/** The panel's section: each judge's accuracy, the majority against the best, n_eff, and each pair. */
export function panelSection(panel: PanelSummary | undefined): HTMLElement | undefined {
  if (!panel) return undefined;
  const e = panel.effectiveJudges;
  const vs = panel.majorityVsBest;
  return section(
    'Judge panel',
    h(
      'p',
      { class: 'muted' },
      `${panel.judges.length} judges (${panel.source}) on ${panel.items} items. Errors are mistakes against gold; two judges that err on the same items are worth less than two independent ones. 95% bootstrap intervals.`,
    ),
    h(
      'div',
      { class: 'charts', 'data-testid': 'panel' },
      h(
        'figure',
        { class: 'figure' },
        h('figcaption', null, 'Accuracy against gold: each judge and the panel’s majority'),
        table(
          ['', 'accuracy', '95% CI', '', 'n'],
          [
            ...panel.judges.map((judge) => [
              judge,
              ...cells(`panel.accuracy.${judge}`, panel.accuracy[judge]!, 0, 1),
            ]),
            [h('b', null, `majority (${panel.ties} tied)`), ...cells('panel.majority', panel.majority, 0, 1)],
          ],
          'grid metrics',
        ),
        vs
          ? h(
              'p',
              { 'data-testid': 'panel-vs-best' },
              `Majority − best judge (${vs.bestJudge}): ${signed(vs.delta)} ${ciText(vs.ci)} over ${vs.n} items, p ${pValue(vs.pValue)}.`,
            )
          : null,
      ),
      h(
        'figure',
        { class: 'figure' },
        h('figcaption', null, 'Effective number of independent judges, k / (1 + (k − 1)·ρ̄)'),
        table(
          ['', 'value', '95% CI', '', 'n'],
          [[`n_eff of ${e.k}`, ...cells('panel.effectiveJudges', e, 1, Math.max(2, e.k))]],
          'grid metrics',
        ),
        h(
          'p',
          { class: 'muted' },
          `Mean error correlation ρ̄ ${num(e.meanErrorCorrelation)} over ${e.pairs} pairs.`,
        ),
      ),
      h(
        'figure',
        { class: 'figure wide' },
        h('figcaption', null, 'Pairs: agreement, and the correlation of their errors against gold'),
        table(
          ['pair', 'agreement', '95% CI', 'error correlation', '95% CI', 'n'],
          panel.pairs.map((pair) => [
            pair.judges.join(' ~ '),
            num(pair.agreement.value),
            ciText(pair.agreement.ci),
            num(pair.errorCorrelation.value),
            ciText(pair.errorCorrelation.ci),
            String(pair.agreement.n),
          ]),
        ),
      ),
    ),
  );
}

/** A scorer's self-preference figure: the judge against gold by producer family, and its own-family bias. */
export function selfPreferenceFigure(scorer: string, bias: SelfPreferenceBias): HTMLElement {
  const pref = bias.selfPreference;
  const left = [
    bias.noProducer ? `${bias.noProducer} without a producer` : '',
    bias.noJudge ? `${bias.noJudge} with no known judge model` : '',
    bias.skipped ? `${bias.skipped} without a verdict or gold` : '',
  ].filter(Boolean);
  return h(
    'figure',
    { class: 'figure wide', 'data-testid': 'self-preference' },
    h(
      'figcaption',
      null,
      `Self-preference: the judge against gold by the family of the model that produced each output (column ${bias.column})`,
    ),
    table(
      ['producer family', 'n', 'judged by its own family', 'judge', 'gold', 'judge − gold', '95% CI'],
      Object.entries(bias.byProducer).map(([family, f]) => [
        family,
        String(f.n),
        String(f.ownFamily),
        num(f.judge.value),
        num(f.gold.value),
        signed(f.error.value),
        ciText(f.error.ci),
      ]),
    ),
    h(
      'p',
      { 'data-metric': `${scorer}.bias.selfPreference` },
      pref
        ? `Own-family bias ${signed(pref.value)} ${ciText(pref.ci)}: the judge's error on its own family's outputs (${signed(pref.own.error)}, n ${pref.own.n}) minus that on others' (${signed(pref.other.error)}, n ${pref.other.n}). Positive: it favours its own family.`
        : "Own-family bias n/a: it needs outputs of the judge's own family and of another.",
    ),
    left.length > 0 ? h('p', { class: 'muted' }, `Left out: ${left.join(', ')}.`) : null,
  );
}
