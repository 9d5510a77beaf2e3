/**
 * What the text outputs and pages do with hostile data: control characters written visibly,
 * the page's policy naming its own script and style by hash, and leaderboard entries of the
 * wrong shape named rather than crashing the board.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { textTable, visible, visibleLine } from '../../../shared/lib/format.js';
import { entryOfReport, entryProblem } from '../../../shared/model/leaderboard-entry.js';
import type { LeaderboardEntry } from '../../../shared/model/report.js';
import { renderPage } from '../../../shared/reports/html/render.js';
import { leaderboardTables, renderLeaderboard } from '../../../shared/reports/leaderboard.js';

describe('visible', () => {
  it('writes every C0 and C1 control character but tab and line feed as \\xNN', () => {
    expect(visible('a\x1b]8;;http://evil\x07b\x1b[2J\r\b\x7f\x9b\x00')).toBe(
      String.raw`a\x1b]8;;http://evil\x07b\x1b[2J\x0d\x08\x7f\x9b\x00`,
    );
    expect(visible('two\nlines\tand a tab')).toBe('two\nlines\tand a tab');
    expect(visibleLine('two\nlines\tand a tab')).toBe(String.raw`two\x0alines\x09and a tab`);
    // Printable text outside ASCII is left alone.
    expect(visible('Grüße — ✓ 日本')).toBe('Grüße — ✓ 日本');
  });

  it('leaves no control character in any of the 160 C0/C1 code points but tab and line feed', () => {
    const all = Array.from({ length: 0xa0 }, (_, c) => String.fromCharCode(c)).join('');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(visible(all).replace(/[\t\n]/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('textTable cells of data keep their columns when escaped', () => {
    const [header, , row] = textTable(['id', 'n'], [[visibleLine('a\x1b[2J'), '1']]);
    expect(row).toBe(String.raw`a\x1b[2J  1`);
    expect(header!.indexOf('n')).toBe(row!.lastIndexOf('1'));
  });
});

describe('the page policy', () => {
  it("names the page's one script and one style element by their SHA-256, and allows nothing inline else", () => {
    const page = renderPage('t', { kind: 'leaderboard', tables: [] });
    const policy = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(page)![1]!;
    expect(policy).not.toContain('unsafe');
    const scripts = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    const styles = [...page.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    expect(styles).toHaveLength(1);
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    expect(policy).toContain(`script-src ${hash(scripts[0]!)};`);
    expect(policy).toContain(`style-src ${hash(styles[0]!)};`);
    expect(policy).toContain("default-src 'none'");
  });
});

const entry: LeaderboardEntry = {
  schemaVersion: 1 as LeaderboardEntry['schemaVersion'],
  runId: 'run-1',
  suite: 'tone\x1b[2J',
  task: 'judge',
  dataset: 'replies.csv',
  config: {},
  backends: ['openai:gpt-4o-mini'],
  promptVersion: 'tone.md@abcdef0',
  simulated: false,
  primaryScorer: 'label',
  metrics: { accuracy: { value: 0.5, n: 10, ci: [0.2, 0.8] } },
  items: 10,
  scored: 10,
  per10kUsd: null,
  p50LatencyMs: 12,
  finishedAt: '2026-01-01T00:00:00Z',
};

describe('leaderboard entries', () => {
  it('renders names from the runs visibly', () => {
    const text = renderLeaderboard(leaderboardTables([entry]));
    expect(text).toContain(String.raw`tone\x1b[2J`);
    expect(text).not.toContain('\x1b');
  });

  it('names what is wrong with an entry of another shape', () => {
    expect(entryProblem(entry)).toBeUndefined();
    expect(entryProblem(null)).toBe('not an object');
    expect(entryProblem({ ...entry, dataset: 3 })).toBe('dataset is not a string');
    expect(entryProblem({ ...entry, metrics: { accuracy: { n: 1 } } })).toBe('metric accuracy has no value');
    expect(entryProblem({ ...entry, backends: 'x' })).toBe('backends is not a list of strings');
    expect(entryProblem({ ...entry, per10kUsd: '1' })).toBe('per10kUsd is not a number');
  });

  it('refuses a report.json of another shape, saying what is wrong', () => {
    expect(() => entryOfReport([])).toThrow('report.json is not a report (not an object)');
    expect(() => entryOfReport({ scores: {} })).toThrow(
      'report.json is not a report (prompts is not an object)',
    );
    expect(() =>
      entryOfReport({ scores: {}, prompts: { 'a.md': 1 }, counts: {}, cost: {}, latencyMs: {} }),
    ).toThrow('a prompt hash is not a string');
    expect(() => entryOfReport({ scores: {}, prompts: {}, counts: {}, cost: {}, latencyMs: {} })).toThrow(
      'report.json is not a report (runId is not a string)',
    );
  });
});
