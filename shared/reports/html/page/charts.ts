/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/** The page's charts, drawn by uPlot on canvas: histograms, the ROC curve, quality-vs-cost scatter. */
import uPlot from 'uplot';
import { h, num } from './dom.js';

const WIDTH = 520;
const HEIGHT = 240;
const ACCENT = '#2563eb';

/** A chart element, drawn once it is in the document (uPlot measures its container). */
function chartBox(title: string, make: (box: HTMLElement) => void, note?: string): HTMLElement {
  const box = h('div', { class: 'chart' });
  const figure = h(
    'figure',
    { class: 'figure' },
    h('figcaption', null, title),
    box,
    note ? h('p', { class: 'note' }, note) : null,
  );
  // uPlot draws into a detached element as well: the sizes are given, not measured.
  make(box);
  return figure;
}

/** Bins of `values`: one per value when there are few integers, else equal-width bins. */
export function bins(
  values: ArrayLike<number>,
  maxBins = 30,
): { x: number[]; count: number[]; width: number } {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let integers = true;
  for (let i = 0; i < values.length; i += 1) {
    const v = values[i]!;
    if (v < min) min = v;
    if (v > max) max = v;
    if (!Number.isInteger(v)) integers = false;
  }
  if (values.length === 0) return { x: [], count: [], width: 1 };
  if (integers && max - min <= maxBins) {
    const x = Array.from({ length: max - min + 1 }, (_, i) => min + i);
    const count = x.map(() => 0);
    for (let i = 0; i < values.length; i += 1) count[values[i]! - min]! += 1;
    return { x, count, width: 1 };
  }
  const n = Math.max(1, Math.min(maxBins, Math.ceil(Math.sqrt(values.length))));
  const width = (max - min) / n || 1;
  const x = Array.from({ length: n }, (_, i) => min + (i + 0.5) * width);
  const count = x.map(() => 0);
  for (let i = 0; i < values.length; i += 1) {
    const b = Math.min(n - 1, Math.floor((values[i]! - min) / width));
    count[b]! += 1;
  }
  return { x, count, width };
}

/** A histogram of `values`; `mark` draws a vertical line (a threshold). */
export function histogram(
  title: string,
  values: ArrayLike<number>,
  xLabel: string,
  mark?: number | null,
  note?: string,
): HTMLElement {
  const b = bins(values);
  return chartBox(
    title,
    (box) => {
      new uPlot(
        {
          width: WIDTH,
          height: HEIGHT,
          legend: { show: false },
          cursor: { points: { show: false } },
          scales: {
            x: {
              time: false,
              range: (_u, lo, hi) => [lo - b.width / 2, hi + b.width / 2],
            },
            y: { range: (_u, _lo, hi) => [0, Math.max(1, hi * 1.08)] },
          },
          axes: [{ label: xLabel }, { label: 'items' }],
          series: [
            {},
            {
              label: 'items',
              fill: `${ACCENT}99`,
              stroke: ACCENT,
              paths: uPlot.paths.bars!({ size: [0.92, 80], align: 0 }),
              points: { show: false },
            },
          ],
          hooks:
            mark === undefined || mark === null
              ? {}
              : {
                  draw: [
                    (u) => {
                      const x = u.valToPos(mark, 'x', true);
                      const ctx = u.ctx;
                      ctx.save();
                      ctx.strokeStyle = '#dc2626';
                      ctx.lineWidth = 2;
                      ctx.setLineDash([6, 4]);
                      ctx.beginPath();
                      ctx.moveTo(x, u.bbox.top);
                      ctx.lineTo(x, u.bbox.top + u.bbox.height);
                      ctx.stroke();
                      ctx.restore();
                    },
                  ],
                },
        },
        [b.x, b.count],
        box,
      );
    },
    note ?? `${values.length.toLocaleString('en')} values`,
  );
}

/**
 * The ROC curve of scores against a binary gold (1 = positive), the point at `threshold`
 * (predicted positive when score ≥ threshold) marked.
 */
export function roc(
  scores: number[],
  gold: number[],
  threshold: number | null,
  auc: number | null,
): HTMLElement | null {
  const order = scores.map((_, i) => i).sort((a, b) => scores[b]! - scores[a]!);
  const positives = gold.filter((g) => g === 1).length;
  const negatives = gold.length - positives;
  if (positives === 0 || negatives === 0) return null;
  const fpr = [0];
  const tpr = [0];
  let tp = 0;
  let fp = 0;
  for (let k = 0; k < order.length; k += 1) {
    const i = order[k]!;
    if (gold[i] === 1) tp += 1;
    else fp += 1;
    // One point per distinct score: ties move together.
    if (k === order.length - 1 || scores[order[k + 1]!] !== scores[i]) {
      fpr.push(fp / negatives);
      tpr.push(tp / positives);
    }
  }
  let mark: [number, number] | null = null;
  if (threshold !== null) {
    let mtp = 0;
    let mfp = 0;
    for (let i = 0; i < scores.length; i += 1) {
      if (scores[i]! >= threshold) {
        if (gold[i] === 1) mtp += 1;
        else mfp += 1;
      }
    }
    mark = [mfp / negatives, mtp / positives];
  }
  const markSeries = fpr.map((x, i) => (mark && x === mark[0] && tpr[i] === mark[1] ? mark[1] : null));
  if (mark && !markSeries.some((v) => v !== null)) {
    // The threshold falls between two scores: its point is added in order.
    let at = fpr.findIndex((x, i) => x > mark![0] || (x === mark![0] && tpr[i]! > mark![1]));
    if (at < 0) at = fpr.length;
    fpr.splice(at, 0, mark[0]);
    tpr.splice(at, 0, mark[1]);
    markSeries.splice(at, 0, mark[1]);
  }
  const chance = fpr.map((x) => x);
  const note = `${positives} positive, ${negatives} negative${auc !== null ? `; AUC ${num(auc)}` : ''}${
    mark ? `; at threshold ${threshold}: TPR ${num(mark[1])}, FPR ${num(mark[0])}` : ''
  }`;
  return chartBox(
    'ROC curve against the binary gold',
    (box) => {
      new uPlot(
        {
          width: 360,
          height: 300,
          legend: { show: true },
          scales: { x: { time: false, range: [0, 1] }, y: { range: [0, 1] } },
          axes: [{ label: 'false positive rate' }, { label: 'true positive rate' }],
          series: [
            { label: 'FPR' },
            { label: 'ROC', stroke: ACCENT, width: 2, points: { show: false } },
            { label: 'chance', stroke: '#9ca3af', dash: [4, 4], points: { show: false } },
            {
              label: `threshold ${threshold ?? ''}`,
              stroke: '#dc2626',
              paths: () => null,
              points: { show: true, size: 10, fill: '#dc2626', stroke: '#dc2626' },
            },
          ],
        },
        [fpr, tpr, chance, markSeries],
        box,
      );
    },
    note,
  );
}

export interface ScatterPoint {
  x: number;
  y: number;
  label: string;
  front: boolean;
}

/** Quality against cost, each point labelled; the points on the Pareto front joined by a line. */
export function scatter(
  title: string,
  points: ScatterPoint[],
  xLabel: string,
  yLabel: string,
  note?: string,
): HTMLElement {
  const sorted = [...points].sort((a, b) => a.x - b.x || a.y - b.y);
  const xs = sorted.map((p) => p.x);
  const all = sorted.map((p) => p.y);
  const front = sorted.map((p) => (p.front ? p.y : null));
  return chartBox(
    title,
    (box) => {
      new uPlot(
        {
          width: WIDTH,
          height: 320,
          legend: { show: false },
          scales: {
            x: { time: false, range: (_u, lo, hi) => pad(lo, hi) },
            y: { range: (_u, lo, hi) => pad(lo, hi) },
          },
          axes: [{ label: xLabel }, { label: yLabel }],
          series: [
            { label: xLabel },
            {
              label: 'variant',
              stroke: ACCENT,
              paths: () => null,
              points: { show: true, size: 9, fill: ACCENT },
            },
            {
              label: 'Pareto front',
              stroke: '#16a34a',
              width: 2,
              spanGaps: true,
              points: { show: true, size: 11, fill: '#16a34a' },
            },
          ],
          hooks: {
            draw: [
              (u) => {
                const ctx = u.ctx;
                const dpr = devicePixelRatio;
                const size = 11 * dpr;
                const gap = 7 * dpr;
                const { left, top, width } = u.bbox;
                ctx.save();
                ctx.font = `${size}px system-ui, sans-serif`;
                ctx.fillStyle = '#111827';
                // Each label beside its point inside the plot: to its left where the right edge
                // would cut it, below it where the top would (the page's test reads the boxes).
                const boxes: [number, number][] = [];
                for (const p of sorted) {
                  const x = u.valToPos(p.x, 'x', true);
                  const y = u.valToPos(p.y, 'y', true);
                  const text = ctx.measureText(p.label).width;
                  const from = x + gap + text <= left + width ? x + gap : Math.max(left, x - gap - text);
                  const baseline = y - 5 * dpr - size < top ? y + 5 * dpr + size : y - 5 * dpr;
                  ctx.fillText(p.label, from, baseline);
                  boxes.push([(from - left) / dpr, (from + text - left) / dpr]);
                }
                ctx.restore();
                box.dataset.labelSpans = JSON.stringify(boxes);
                box.dataset.plotWidth = String(width / dpr);
              },
            ],
          },
        },
        [xs, all, front],
        box,
      );
    },
    note,
  );
}

function pad(lo: number, hi: number): [number, number] {
  const span = hi - lo || Math.abs(hi) || 1;
  return [lo - span * 0.12, hi + span * 0.12];
}
