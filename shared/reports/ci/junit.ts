/**
 * JUnit XML for CI systems (GitHub, GitLab, Jenkins, Buildkite read it as test results): a run,
 * a sweep or a comparison as test suites of test cases. A test case fails exactly when it is a
 * reason for the command to exit 1 (a run or variant that scored nothing, a required variant's
 * gate); a gated variant that is not required and not promoted is `skipped`, with the gate's
 * reason, so the file and the exit code agree. The figures are the reports' own, read from the
 * report model, never computed again here.
 */
import { ms, usd, visible } from '../../lib/format.js';
import type { Report } from '../../model/report.js';
import { type Comparison, datasetChanges } from '../compare-runs.js';
import { scorerSection } from '../comparison.js';
import { costLine, countsLine, failureKinds, headline, incompleteNotice } from '../files.js';

export interface JunitCase {
  /** Dotted, as JUnit readers group cases: `assay.run.<suite>`. */
  classname: string;
  name: string;
  /** Seconds. */
  time?: number;
  /** Present when the case fails: `message` one line, `body` the details. */
  failure?: { message: string; type: string; body: string };
  /** Present when the case was not held against anything that could fail it. */
  skipped?: { message: string };
  systemOut?: string;
}

export interface JunitSuite {
  name: string;
  /** Seconds. */
  time?: number;
  /** Facts about the run readers show beside the cases (simulated, run id, dataset). */
  properties: [name: string, value: string][];
  cases: JunitCase[];
}

/**
 * What XML 1.0 cannot hold even as a reference, once control characters are written visibly:
 * lone surrogates, U+FFFE and U+FFFF.
 */
const NOT_XML = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]|[\ufffe\uffff]/g;

/**
 * Text as XML holds it: control characters written visibly (`\x1b`, `\x0d`, as every text
 * output of Assay writes them; tab and line feed kept), whatever XML cannot hold at all replaced
 * by U+FFFD, then the markup characters escaped. In an attribute, line feeds and tabs are
 * written as references too, so a reader gets them back rather than spaces.
 */
export function xmlEscape(text: string, attribute = false): string {
  const escaped = visible(text)
    .replace(NOT_XML, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
  if (!attribute) return escaped;
  return escaped
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\n/g, '&#10;')
    .replace(/\t/g, '&#9;');
}

const attrs = (pairs: [string, string | number | undefined][]): string =>
  pairs
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${xmlEscape(String(v), true)}"`)
    .join('');

const seconds = (t: number | undefined) => (t === undefined ? undefined : t.toFixed(3));

/** The suites as one JUnit XML document: `<testsuites>` with the totals of its suites. */
export function renderJunit(suites: readonly JunitSuite[]): string {
  const count = (suite: JunitSuite, what: 'failure' | 'skipped') => suite.cases.filter((c) => c[what]).length;
  const total = (f: (s: JunitSuite) => number) => suites.reduce((sum, s) => sum + f(s), 0);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attrs([
      ['name', 'assay'],
      ['tests', total((s) => s.cases.length)],
      ['failures', total((s) => count(s, 'failure'))],
      ['errors', 0],
      ['skipped', total((s) => count(s, 'skipped'))],
      ['time', seconds(total((s) => s.time ?? 0))],
    ])}>`,
  ];
  for (const suite of suites) {
    lines.push(
      `  <testsuite${attrs([
        ['name', suite.name],
        ['tests', suite.cases.length],
        ['failures', count(suite, 'failure')],
        ['errors', 0],
        ['skipped', count(suite, 'skipped')],
        ['time', seconds(suite.time)],
      ])}>`,
      '    <properties>',
      ...suite.properties.map(
        ([name, value]) =>
          `      <property${attrs([
            ['name', name],
            ['value', value],
          ])}/>`,
      ),
      '    </properties>',
    );
    for (const c of suite.cases) {
      lines.push(
        `    <testcase${attrs([
          ['classname', c.classname],
          ['name', c.name],
          ['time', seconds(c.time ?? 0)],
        ])}>`,
      );
      if (c.failure)
        lines.push(
          `      <failure${attrs([
            ['message', c.failure.message],
            ['type', c.failure.type],
          ])}>${xmlEscape(c.failure.body)}</failure>`,
        );
      if (c.skipped) lines.push(`      <skipped${attrs([['message', c.skipped.message]])}/>`);
      if (c.systemOut !== undefined) lines.push(`      <system-out>${xmlEscape(c.systemOut)}</system-out>`);
      lines.push('    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return `${lines.join('\n')}\n`;
}

/** Seconds between two ISO times; undefined when either is missing or unreadable. */
export function elapsed(from: string | null | undefined, to: string | null | undefined): number | undefined {
  if (!from || !to) return undefined;
  const t = (Date.parse(to) - Date.parse(from)) / 1000;
  return Number.isFinite(t) && t >= 0 ? t : undefined;
}

/** What a case says after its name when the answers were simulated. */
export const SIMULATED_TAG = ' (SIMULATED)';

/** The properties every suite of a simulated (or not) run carries first. */
export function simulatedProperties(
  simulated: boolean | string,
  notice: string | undefined,
): [string, string][] {
  return [['simulated', String(simulated)], ...(notice ? [['notice', notice] as [string, string]] : [])];
}

/**
 * A run's figures as a case prints them: the SIMULATED notice, the incomplete notice, the items
 * (failed ones by kind: provider errors, invalid rows), each scorer's headline figures, the cost.
 */
export function runLines(report: Report): string[] {
  const kinds = failureKinds(report.counts);
  return [
    ...(report.simulated ? [report.notice ?? 'SIMULATED'] : []),
    ...[incompleteNotice(report)].filter((line) => line !== undefined),
    countsLine(report.counts),
    ...(kinds ? [`failures by kind: ${kinds}`] : []),
    ...Object.entries(report.scores).map(([name, s]) => headline(name, s)),
    `${costLine(report.cost)}  latency p50 ${ms(report.latencyMs.p50)}`,
  ];
}

/**
 * Why a finished run cannot pass: it is incomplete, or it scored nothing (`unscorable`, the
 * reason `assay run` exits 1 with); undefined when it passes.
 */
export function runFailure(
  report: Pick<Report, 'status' | 'missingItems' | 'counts'>,
  unscorable: string | undefined,
): JunitCase['failure'] | undefined {
  if (unscorable) return { message: unscorable, type: 'RunUnscorable', body: unscorable };
  const incomplete = incompleteNotice(report);
  if (incomplete) return { message: incomplete, type: 'RunIncomplete', body: incomplete };
  return undefined;
}

/** The JUnit suite of one run (no gate): one case, passing when the run finished and scored. */
export function runJunitSuite(report: Report, unscorable?: string): JunitSuite {
  const tag = report.simulated ? SIMULATED_TAG : '';
  const failure = runFailure(report, unscorable);
  return {
    name: `assay run ${report.suite}${tag}`,
    time: elapsed(report.startedAt, report.finishedAt),
    properties: [
      ...simulatedProperties(report.simulated, report.notice),
      ['suite', report.suite],
      ['task', report.task],
      ['runId', report.runId],
      ['dataset', report.dataset],
      ['backends', report.backends.join(' ')],
      ['status', report.status],
    ],
    cases: [
      {
        classname: `assay.run.${report.suite}`,
        name: `run ${report.suite}${tag}`,
        time: elapsed(report.startedAt, report.finishedAt),
        ...(failure ? { failure } : {}),
        systemOut: runLines(report).join('\n'),
      },
    ],
  };
}

/** JUnit XML of one run. */
export function runJunit(report: Report, unscorable?: string): string {
  return renderJunit([runJunitSuite(report, unscorable)]);
}

/** The flipped items are counted in a case's output, listed in comparison.txt. */
const FLIPPED_ELSEWHERE = { limit: 0, allIn: 'comparison.txt (assay compare --out DIR)' };

/** What every case of a comparison says first: the SIMULATED notice, the items paired, the cost. */
export function comparisonLines(c: Comparison): string[] {
  const { paired, onlyBase, onlyCandidate, changed } = c.items;
  const dataset = datasetChanges(c);
  return [
    ...(c.simulated ? [c.notice ?? 'SIMULATED'] : []),
    `base ${c.base.runId}, candidate ${c.candidate.runId}`,
    `items: ${paired} paired, ${onlyBase} only in base, ${onlyCandidate} only in candidate${changed ? `, ${changed} changed` : ''} (invalid rows not paired)`,
    ...(dataset
      ? [`dataset changes: ${dataset.changed} changed, ${dataset.added} added, ${dataset.removed} removed`]
      : []),
    `cost: base ${usd(c.cost.base)}, candidate ${usd(c.cost.candidate)}`,
  ];
}

/**
 * The JUnit suite of a comparison: a case per scorer the two runs share, passing (a comparison
 * has no gate), its paired deltas with their intervals and p-values in its output; with no
 * scorer in common, one failing case saying so.
 */
export function comparisonJunitSuite(c: Comparison): JunitSuite {
  const tag = c.simulated ? SIMULATED_TAG : '';
  const classname = `assay.compare.${c.candidate.suite}`;
  const common = comparisonLines(c);
  const cases: JunitCase[] = Object.entries(c.scores).map(([scorer, s]) => ({
    classname,
    name: `${scorer}: ${c.candidate.runId} vs ${c.base.runId}${tag}`,
    systemOut: [...common, ...scorerSection(scorer, s, scorer === c.primaryScorer, FLIPPED_ELSEWHERE)].join(
      '\n',
    ),
  }));
  if (cases.length === 0) {
    const message = 'the runs have no scorer in common: nothing was compared';
    cases.push({
      classname,
      name: `${c.candidate.runId} vs ${c.base.runId}${tag}`,
      failure: { message, type: 'NothingCompared', body: message },
      systemOut: common.join('\n'),
    });
  }
  return {
    name: `assay compare ${c.base.runId} → ${c.candidate.runId}${tag}`,
    properties: [
      ...simulatedProperties(c.simulated, c.notice),
      ['base', c.base.runId],
      ['candidate', c.candidate.runId],
      [
        'dataset',
        c.base.dataset === c.candidate.dataset
          ? c.base.dataset
          : `${c.base.dataset} vs ${c.candidate.dataset}`,
      ],
    ],
    cases,
  };
}

/** JUnit XML of a comparison. */
export function comparisonJunit(c: Comparison): string {
  return renderJunit([comparisonJunitSuite(c)]);
}
