/**
 * `assay init [dir]`: a small working evaluation to start from — a judge declared without
 * code (a prompt file and its labels), a labelled dataset, and the suite tying them together —
 * copied from templates/init/ in the package. It runs at once with `--simulate`.
 */
import { constants, existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { MAX_NAME_CHARS } from '../shared/model/suite-base.js';
import { assayCommand, PACKAGE_ROOT } from './package-root.js';

export const DEFAULT_INIT_DIR = 'my-eval';

const TEMPLATES = join(PACKAGE_ROOT, 'templates', 'init');
const SUITE_FILE = 'eval.suite.json';

/** What `assay init` writes: the file in the new folder, and the template it comes from. */
const FILES = [
  { file: 'data.csv', template: 'data.csv' },
  { file: join('prompts', 'judge.md'), template: join('prompts', 'judge.md') },
  { file: SUITE_FILE, template: 'suite.json' },
] as const;

/** A suite name from the folder's name (suite names are letters, digits, dot, dash, underscore). */
export function suiteNameFor(dir: string): string {
  const name = basename(resolve(dir))
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    // A suite name is at most MAX_NAME_CHARS long (file and object keys are built from it).
    .slice(0, MAX_NAME_CHARS);
  return name || DEFAULT_INIT_DIR;
}

/** The suite's `$schema`: the schema shipped with this Assay, relative to the new folder. */
function schemaRef(dir: string): string {
  const path = relative(resolve(dir), join(PACKAGE_ROOT, 'schemas', 'suite.schema.json'));
  return path.split(sep).join('/');
}

export interface InitOutcome {
  dir: string;
  /** The files written, as paths under `dir`'s parent as given (e.g. my-eval/data.csv). */
  written: string[];
}

/**
 * Writes the evaluation into `dir` (created if needed). Refuses, writing nothing, when any of
 * its files already exists.
 */
export async function initEvaluation(dir: string): Promise<InitOutcome> {
  const targets = FILES.map(({ file, template }) => ({
    path: join(dir, file),
    template: join(TEMPLATES, template),
  }));
  const existing = targets.filter((t) => existsSync(t.path)).map((t) => t.path);
  if (existing.length > 0) {
    throw new Error(
      `not overwriting ${existing.join(', ')}: choose another folder (${assayCommand()} init <dir>) or move ${existing.length === 1 ? 'it' : 'them'} away`,
    );
  }
  const suite = (await readFile(join(TEMPLATES, 'suite.json'), 'utf8'))
    .replace('"SCHEMA"', JSON.stringify(schemaRef(dir)))
    .replace('"NAME"', JSON.stringify(suiteNameFor(dir)));
  for (const target of targets) {
    await mkdir(dirname(target.path), { recursive: true });
    // Exclusive writes: a file that appeared meanwhile is not overwritten either.
    if (target.path.endsWith(SUITE_FILE)) await writeFile(target.path, suite, { flag: 'wx' });
    else await copyFile(target.template, target.path, constants.COPYFILE_EXCL);
  }
  return { dir, written: targets.map((t) => t.path) };
}

/**
 * What the command prints: the files, then what to edit and run, in order; `assay` is the
 * command as the user invokes it (`npx assay` through npx).
 */
export function initMessage({ dir, written }: InitOutcome, assay = assayCommand()): string {
  const suite = join(dir, SUITE_FILE);
  return [
    `wrote ${written.length} files:`,
    ...written.map((path) => `  ${path}`),
    '',
    'next:',
    `  1. edit the prompt: ${join(dir, 'prompts', 'judge.md')} (each {placeholder} is a column of data.csv, alone in its <tag> section)`,
    `  2. edit the labels in ${suite} (judge.labels; the gold column must use them)`,
    `  3. replace ${join(dir, 'data.csv')} by your own rows: an id, the columns the prompt reads, the human label`,
    `  4. try it without a key (fabricated answers, to check the wiring): ${assay} run ${suite} --simulate`,
    `  5. judge for real: set OPENAI_API_KEY (or change "backends" to another vendor and set its key), then: ${assay} run ${suite}`,
    '',
  ].join('\n');
}

export async function initCommand(dir: string | undefined): Promise<void> {
  process.stdout.write(initMessage(await initEvaluation(dir ?? DEFAULT_INIT_DIR)));
}
