/**
 * Every bucket prefix and table key of the AWS shell is written down once, in shared/layout/.
 * This guard reads the string literals of the adapters, the stack and the CLI (parsed with the
 * TypeScript compiler, so comments and docs may still name the keys) and refuses any that spells
 * a declared prefix or fixed key itself instead of taking it from the layout.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import {
  ACCESS_LOG_PREFIX,
  DATASETS_PREFIX,
  PROMPT_PREFIX,
  REPORTS_PREFIX,
  RESULTS_PREFIX,
  SPILL_PREFIX,
  SUITES_PREFIX,
} from '../../../shared/lib/layout/bucket.js';
import { FIXED_KEYS, KEY_PREFIXES } from '../../../shared/lib/layout/table.js';
import { REPO } from '../../helpers.js';

/** Where the layout's readers live. */
const SCANNED = ['shared/adapters', 'infra', 'cli'];

/** Literals that start with one of these spell a prefix. */
const PREFIXES = [
  ...new Set([
    DATASETS_PREFIX,
    SUITES_PREFIX,
    PROMPT_PREFIX,
    REPORTS_PREFIX,
    RESULTS_PREFIX,
    SPILL_PREFIX,
    ACCESS_LOG_PREFIX,
    ...Object.values(KEY_PREFIXES),
  ]),
];
/** Literals equal to one of these spell a fixed key. */
const FIXED = new Set<string>(Object.values(FIXED_KEYS));

/** The literals of `source` that spell a declared prefix or fixed key, as `line: text`. */
function strayLiterals(fileName: string, source: string): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    // A prefix is spelt at the start of a literal or of a template (`RUN#${id}`); a fixed key is a whole literal.
    const whole = ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node);
    if (whole || ts.isTemplateHead(node)) {
      const text = node.text;
      if (PREFIXES.some((prefix) => text.startsWith(prefix)) || (whole && FIXED.has(text))) {
        const { line } = file.getLineAndCharacterOfPosition(node.getStart());
        found.push(`${line + 1}: ${node.getText()}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory())
      return entry.name === 'node_modules' || entry.name === 'cdk.out' ? [] : sourceFiles(path);
    return /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('layout prefixes', () => {
  it('finds prefixes and fixed keys spelt in string and template literals, not in comments', () => {
    // biome-ignore-start lint/suspicious/noTemplateCurlyInString: TypeScript source as text
    const source = [
      "const a = 'spill/' + id;",
      'const b = `RUN#${runId}`;',
      "const c = { sk: 'META' };",
      '// `RUN#<runId>` in a comment, and a word that only contains META: fine',
      "const d = 'METADATA';",
      'const e = `${prefix}RESULT#`;',
      "const f = ['datasets/x.csv'];",
    ].join('\n');
    // biome-ignore-end lint/suspicious/noTemplateCurlyInString: TypeScript source as text
    expect(strayLiterals('sample.ts', source)).toEqual([
      "1: 'spill/'",
      '2: `RUN#${',
      "3: 'META'",
      "7: 'datasets/x.csv'",
    ]);
  });

  it('are spelt nowhere in the adapters, the stack or the CLI but in shared/layout/', () => {
    const stray = SCANNED.flatMap((dir) =>
      sourceFiles(join(REPO, dir)).flatMap((path) =>
        strayLiterals(path, readFileSync(path, 'utf8')).map((hit) => `${relative(REPO, path)}:${hit}`),
      ),
    );
    expect(stray).toEqual([]);
  });
});
