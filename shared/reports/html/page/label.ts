/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The labelling page (`assay label`): one chosen item at a time, its inputs, and a key per
 * label. The judge's verdict stays hidden until the person has answered, so it cannot sway the
 * answer. Keys: the label's digit or letter, `u` undo, `s` skip, ← → move. Progress is kept in
 * the browser's storage under the page's run and items (when the browser allows storage for a
 * file opened from disk), and "Export CSV" writes `id,label,p` for `dataset.goldFile`.
 */

import { labelCsvCell } from '../../csv-cell.js';
import type { LabelChoice, LabelPageData, LabelPageItem } from '../types.js';
import { banner, h, num } from './dom.js';

type Answer = { label: string } | { skip: true };

interface State {
  answers: Record<string, Answer>;
  /** Undo stack: the item changed and what it held before (null: nothing). */
  history: { id: string; before: Answer | null }[];
  at: number;
}

/** The browser's storage, or null when it is blocked (some browsers block it for file://). */
function storage(): Storage | null {
  try {
    const s = window.localStorage;
    const probe = '__assay_probe__';
    s.setItem(probe, '1');
    s.removeItem(probe);
    return s;
  } catch {
    return null;
  }
}

/**
 * The saved progress of this page, checked entry by entry: every page opened from disk may share
 * the storage of `file://`, so another page may have rewritten it. An answer is kept only for an
 * item of this page, with a label of its label set (or a skip); an undo step only when its item
 * is of this page and what it restores passes the same check. Anything else is dropped, never
 * shown, restored by an undo or exported.
 */
function load(store: Storage | null, key: string, items: LabelPageItem[], labels: LabelChoice[]): State {
  const fresh: State = { answers: {}, history: [], at: 0 };
  if (!store) return fresh;
  try {
    const saved = JSON.parse(store.getItem(key) ?? 'null') as unknown;
    if (!isRecord(saved)) return fresh;
    const ids = new Set(items.map((i) => i.id));
    const values = new Set(labels.map((l) => l.value));
    const answers: Record<string, Answer> = {};
    for (const [id, a] of Object.entries(isRecord(saved.answers) ? saved.answers : {})) {
      const answer = answerOf(a, values);
      if (ids.has(id) && answer) answers[id] = answer;
    }
    const history: State['history'] = [];
    for (const step of Array.isArray(saved.history) ? saved.history : []) {
      if (!isRecord(step) || typeof step.id !== 'string' || !ids.has(step.id)) continue;
      const before = step.before === null ? null : answerOf(step.before, values);
      if (before !== undefined) history.push({ id: step.id, before });
    }
    const at = typeof saved.at === 'number' && Number.isInteger(saved.at) ? saved.at : -1;
    return { answers, history, at: at >= 0 && at < items.length ? at : 0 };
  } catch {
    return fresh;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A saved answer as the page makes them (a label of `values`, or a skip); undefined otherwise. */
function answerOf(value: unknown, values: ReadonlySet<string>): Answer | undefined {
  if (!isRecord(value) || Object.keys(value).length !== 1) return undefined;
  if (typeof value.label === 'string' && values.has(value.label)) return { label: value.label };
  if (value.skip === true) return { skip: true };
  return undefined;
}

/**
 * The answered items (not the skipped ones) as CSV `id,label,p`, in page order. `p` is the
 * probability the item came to be labelled: the chance it was chosen times the share of the
 * chosen items that were labelled — the page shows them in a random order, so stopping partway
 * labels a random share of them, and an estimate that weighs each label by 1/p stays unbiased.
 * With every item labelled, `p` is the chance it was chosen.
 */
export function labelsCsv(items: readonly LabelPageItem[], answers: Record<string, Answer>): string {
  const labelled = items.filter((item) => {
    const a = answers[item.id];
    return a !== undefined && 'label' in a;
  });
  const share = items.length === 0 ? 1 : labelled.length / items.length;
  const lines = ['id,label,p'];
  for (const item of labelled) {
    const a = answers[item.id] as { label: string };
    lines.push(
      [labelCsvCell(item.id), labelCsvCell(a.label), String(Number((item.p * share).toPrecision(12)))].join(
        ',',
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}

function keyText(choice: LabelChoice): string {
  return [choice.digit, choice.letter].filter(Boolean).join(' / ');
}

export function labelPage(data: LabelPageData): HTMLElement[] {
  const { items, labels } = data;
  const store = storage();
  const state = load(store, data.storageKey, items, labels);
  const byDigit = new Map(labels.filter((l) => l.digit).map((l) => [l.digit!, l]));
  const byLetter = new Map(labels.filter((l) => l.letter).map((l) => [l.letter!, l]));

  const progress = h('p', { class: 'label-progress', 'data-testid': 'progress' });
  const bar = h('div', { class: 'label-bar' }, h('span'));
  const card = h('div', { class: 'label-card', 'data-testid': 'card' });
  const last = h('p', { class: 'label-last', 'data-testid': 'last' });
  const saved = h('p', { class: 'note', 'data-testid': 'storage' });

  const save = () => {
    if (!store) return;
    try {
      store.setItem(data.storageKey, JSON.stringify(state));
    } catch {
      // A full or newly blocked storage: the page still works; the note says to export.
    }
  };

  const counts = () => {
    let answered = 0;
    let skipped = 0;
    for (const item of items) {
      const a = state.answers[item.id];
      if (a && 'label' in a) answered += 1;
      else if (a) skipped += 1;
    }
    return { answered, skipped };
  };

  const verdictBlock = (item: LabelPageItem, answer: Answer | undefined) => {
    const shown = answer !== undefined && 'label' in answer;
    const v = item.verdict;
    const agree = shown && answer.label.toLowerCase() === v.value.toLowerCase();
    const block = h(
      'div',
      { class: 'label-verdict', 'data-testid': 'verdict', hidden: !shown },
      h(
        'p',
        null,
        'The judge said ',
        h('b', { 'data-testid': 'verdict-value' }, v.value),
        shown ? (agree ? ' (as you did)' : ` (you said ${(answer as { label: string }).label})`) : '',
        v.decidedBy ? h('span', { class: 'muted' }, ` · ${v.decidedBy}`) : '',
      ),
      v.explanation ? h('p', { class: 'muted' }, v.explanation) : null,
      v.evidence ? h('p', { class: 'note' }, v.evidence.join(' · ')) : null,
    );
    return block;
  };

  const draw = () => {
    const { answered, skipped } = counts();
    progress.textContent = `${answered} labelled, ${skipped} skipped, ${items.length - answered - skipped} to go (of ${items.length})`;
    (bar.firstChild as HTMLElement).style.width =
      `${items.length ? ((answered + skipped) / items.length) * 100 : 0}%`;
    exportButton.textContent = `Export CSV (${answered} label${answered === 1 ? '' : 's'})`;
    const item = items[state.at];
    if (!item) {
      card.replaceChildren(h('p', null, 'No item to label.'));
      return;
    }
    const answer = state.answers[item.id];
    card.dataset.itemId = item.id;
    card.replaceChildren(
      h(
        'div',
        { class: 'label-head' },
        h('b', null, `Item ${state.at + 1} of ${items.length}`),
        h(
          'span',
          { class: 'muted' },
          ` · id ${item.id} · row ${item.row} · chosen with p = ${num(item.p, 4)}`,
        ),
        item.signal
          ? h('span', { class: 'muted' }, ` · judge uncertainty ${num(item.uncertainty, 2)} (${item.signal})`)
          : null,
        answer
          ? h(
              'span',
              {
                class: `badge ${'label' in answer ? 'badge-right' : 'badge-unscored'}`,
                'data-testid': 'answer',
              },
              'label' in answer ? `you: ${answer.label}` : 'skipped',
            )
          : null,
      ),
      h(
        'dl',
        { class: 'label-inputs' },
        item.inputs.flatMap(([name, text]) => [h('dt', null, name), h('dd', null, h('pre', null, text))]),
      ),
      h(
        'div',
        { class: 'label-choices' },
        labels.map((choice) =>
          h(
            'button',
            {
              type: 'button',
              class: answer && 'label' in answer && answer.label === choice.value ? 'chosen' : null,
              'data-label': choice.value,
              onclick: () => give(choice.value),
            },
            keyText(choice) ? h('kbd', null, keyText(choice)) : null,
            ` ${choice.value}`,
            choice.hint ? h('span', { class: 'muted' }, ` (${choice.hint})`) : null,
          ),
        ),
        h('button', { type: 'button', onclick: skip }, h('kbd', null, 's'), ' skip'),
      ),
      verdictBlock(item, answer),
    );
  };

  const change = (id: string, next: Answer) => {
    state.history.push({ id, before: state.answers[id] ?? null });
    state.answers[id] = next;
  };

  /** Gives the current item a label, shows what the judge said in the strip, moves on. */
  function give(label: string) {
    const item = items[state.at];
    if (!item) return;
    change(item.id, { label });
    const agree = label.toLowerCase() === item.verdict.value.toLowerCase();
    last.textContent = `Item ${item.id}: you said ${label}; the judge said ${item.verdict.value}${agree ? '' : ' (they differ)'}.`;
    move(1);
  }

  function skip() {
    const item = items[state.at];
    if (!item) return;
    change(item.id, { skip: true });
    last.textContent = `Item ${item.id}: skipped (it stays unlabelled).`;
    move(1);
  }

  function undo() {
    const step = state.history.pop();
    if (!step) {
      last.textContent = 'Nothing to undo.';
      return;
    }
    if (step.before === null) delete state.answers[step.id];
    else state.answers[step.id] = step.before;
    const at = items.findIndex((i) => i.id === step.id);
    if (at >= 0) state.at = at;
    last.textContent = `Undone: item ${step.id} is as it was.`;
    save();
    draw();
  }

  function move(by: number) {
    state.at = Math.max(0, Math.min(items.length - 1, state.at + by));
    save();
    draw();
  }

  function exportCsv() {
    const csv = labelsCsv(items, state.answers);
    const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
    const link = h('a', { href: url, download: `${data.suiteName.replace(/[^\w.-]+/g, '_')}-labels.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }

  const exportButton = h('button', {
    type: 'button',
    class: 'label-export',
    'data-testid': 'export',
    onclick: exportCsv,
  });

  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target as HTMLElement | null;
    if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
    const key = event.key;
    const choice = byDigit.get(key) ?? byLetter.get(key.toLowerCase());
    if (choice) give(choice.value);
    else if (key === 'u' || key === 'U') undo();
    else if (key === 's' || key === 'S') skip();
    else if (key === 'ArrowRight') move(1);
    else if (key === 'ArrowLeft') move(-1);
    else return;
    event.preventDefault();
  });

  saved.textContent = store
    ? 'Progress is saved in this browser as you go; export the CSV when done.'
    : 'This browser does not let the page save progress (storage is blocked for files opened from disk): export the CSV before closing the page.';
  draw();

  const legend = h(
    'p',
    { class: 'label-legend' },
    labels.flatMap((choice) =>
      keyText(choice)
        ? [h('kbd', null, keyText(choice)), ` ${choice.value}  `]
        : [`${choice.value} (click)  `],
    ),
    h('kbd', null, 'u'),
    ' undo  ',
    h('kbd', null, 's'),
    ' skip  ',
    h('kbd', null, '←'),
    ' ',
    h('kbd', null, '→'),
    ' move',
  );
  return [
    h('h1', null, `Label: ${data.suiteName}`),
    data.simulated
      ? banner('sim', 'SIMULATED run: the judge verdicts below were fabricated by the simulator.')
      : null,
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'run'),
      h('dd', null, data.runId),
      h('dt', null, 'checked'),
      h('dd', null, `the ${data.scorer} verdict (${data.task})`),
      h('dt', null, 'chosen'),
      h(
        'dd',
        null,
        `${items.length} of ${data.selection.candidates} items without gold (budget ${data.selection.budget}, seed ${data.selection.seed})`,
      ),
    ),
    h('p', { class: 'note', 'data-testid': 'selection-note' }, data.selection.note),
    rubricSection(data.rubric ?? []),
    h(
      'p',
      { class: 'note' },
      'Items come in a random order: stopping partway keeps the labels a fair sample (the exported p counts the share you labelled). A skipped item stays unlabelled; skip only when you cannot tell.',
    ),
    legend,
    progress,
    bar,
    card,
    last,
    h('p', null, exportButton),
    saved,
  ].filter((x): x is HTMLElement => x !== null);
}

/** The judge's prompts, the first open: the rubric a person labels by, as the judge had it. */
function rubricSection(rubric: { path: string; text: string }[]): HTMLElement | null {
  if (rubric.length === 0) return null;
  return h(
    'section',
    { class: 'label-rubric', 'data-testid': 'rubric' },
    h('h2', null, 'The rubric: what the judge was told'),
    rubric.map(({ path, text }, i) =>
      h('details', i === 0 ? { open: true } : null, h('summary', null, path), h('pre', null, text)),
    ),
  );
}
