/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The report page's script: reads the JSON the page embeds and draws the run, sweep,
 * comparison, leaderboard or labelling view. Bundled (with uPlot) into one classic script by
 * scripts/build.mjs; it makes no network request (the page's policy forbids them).
 */
import type { PageData } from '../types.js';
import { h } from './dom.js';
import { labelPage } from './label.js';
import { comparisonPage, leaderboardPage, sweepPage } from './others.js';
import { runPage } from './run.js';

function draw(): void {
  const app = document.getElementById('app')!;
  const started = performance.now();
  try {
    const data = JSON.parse(document.getElementById('assay-data')!.textContent ?? 'null') as PageData;
    const parts =
      data.kind === 'label'
        ? labelPage(data.label)
        : data.kind === 'run'
          ? runPage(data.report as never, data.items)
          : data.kind === 'sweep'
            ? sweepPage(data.sweep)
            : data.kind === 'comparison'
              ? comparisonPage(data.comparison)
              : leaderboardPage(data.tables);
    app.replaceChildren(
      ...parts,
      h('footer', null, 'Assay report · one self-contained file: no server, no network.'),
    );
  } catch (error) {
    app.replaceChildren(
      h(
        'pre',
        { class: 'banner banner-bad' },
        `The report could not be drawn: ${(error as Error).stack ?? error}`,
      ),
    );
  }
  document.body.dataset.drawnMs = String(Math.round(performance.now() - started));
  document.body.dataset.ready = 'true';
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', draw);
else draw();
