import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Cheap guards on the documentation: the README stays a short entry point, every relative link
// in it and in docs/ leads somewhere, and no page leaks words meant for the people building it.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const README = join(ROOT, 'README.md');
const DOCS = join(ROOT, 'docs');
const pages = [
  README,
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(DOCS, f)),
];
const name = (file: string) => relative(ROOT, file);

/** The text without fenced code blocks and inline code, where `](…)` is not a link. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The inline link targets of a markdown text: `[text](target)` and `![alt](target "title")`. */
function linkTargets(text: string): string[] {
  const targets: string[] = [];
  for (const match of prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push(match[1]!);
  }
  return targets;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = anchorOf(match[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Why a relative link from `file` is broken, or undefined when it leads somewhere. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:
  const [path = '', anchor] = target.split('#', 2);
  const dest = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
  if (!existsSync(dest)) return `${target}: no such file ${relative(ROOT, dest)}`;
  if (anchor && statSync(dest).isFile() && dest.endsWith('.md') && !anchorsOf(dest).has(anchor)) {
    return `${target}: ${relative(ROOT, dest)} has no heading #${anchor}`;
  }
  return undefined;
}

describe('documentation', () => {
  it('has a README of at most 300 lines and the reference pages in docs/', () => {
    const lines = readFileSync(README, 'utf8').split('\n').length;
    expect(lines).toBeLessThanOrEqual(300);
    for (const page of ['gec', 'qa', 'cleanup', 'summarization', 'judge', 'suites', 'providers', 'aws']) {
      expect(existsSync(join(DOCS, `${page}.md`)), `docs/${page}.md`).toBe(true);
    }
    for (const page of ['reports', 'performance', 'architecture']) {
      expect(existsSync(join(DOCS, `${page}.md`)), `docs/${page}.md`).toBe(true);
    }
  });

  it.each(pages.map((p) => [name(p), p]))(
    '%s: every relative link leads to a file that exists',
    (_, page) => {
      const text = readFileSync(page, 'utf8');
      const broken = linkTargets(text)
        .map((t) => brokenLink(page, t))
        .filter((b): b is string => b !== undefined);
      expect(broken).toEqual([]);
    },
  );

  it('links every docs page from the README', () => {
    const linked = new Set(linkTargets(readFileSync(README, 'utf8')).map((t) => t.split('#')[0]));
    const missing = pages.filter((p) => p !== README && !linked.has(relative(ROOT, p)));
    expect(missing.map(name)).toEqual([]);
  });

  it.each(pages.map((p) => [name(p), p]))('%s: no words meant for the builders', (_, page) => {
    const text = readFileSync(page, 'utf8');
    expect(text).not.toMatch(/seed 00/i);
    expect(text).not.toContain('../shared');
  });

  it('finds links, and misses none of the broken ones', () => {
    const sample = [
      'See [suites](docs/suites.md#sweeps) and ![a](docs/x.png "t").',
      '`[not](a-link.md)`',
      '```',
      '[also not](inside-code.md)',
      '```',
    ].join('\n');
    expect(linkTargets(sample)).toEqual(['docs/suites.md#sweeps', 'docs/x.png']);
    expect(brokenLink(README, 'docs/no-such-page.md')).toMatch(/no such file/);
    expect(brokenLink(README, '#no-such-heading-anywhere')).toMatch(/has no heading/);
    expect(brokenLink(README, 'https://example.com/x.md')).toBeUndefined();
    expect(anchorOf('Your first evaluation in five minutes')).toBe('your-first-evaluation-in-five-minutes');
    expect(anchorOf('`report.json`: the contract')).toBe('reportjson-the-contract');
  });
});
