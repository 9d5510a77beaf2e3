/**
 * What an import writes: one or more suites, their prompt and data files, and what it could not
 * bring over (each with its reason, never dropped in silence). The format readers build a plan;
 * `writePlan` puts it in a folder without overwriting anything.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { PROMPT_PREFIX } from '../../shared/lib/layout/bucket.js';
import { InputError } from '../../shared/model/errors.js';

export interface ImportPlan {
  /** The format read, for people: `openai/evals registry`, `promptfoo`, `OpenAI Evals`. */
  format: string;
  /** Suite files by path in the folder, each as its JSON. */
  suites: { file: string; suite: Record<string, unknown> }[];
  /** Other files by path in the folder: prompts, datasets. */
  files: Record<string, string>;
  /** What was not imported, and why. */
  refused: { what: string; reason: string }[];
  /** What was imported differently from the original, for people to know. */
  notes: string[];
}

export class ImportError extends InputError {
  override readonly name = 'ImportError';
}

export function emptyPlan(format: string): ImportPlan {
  return { format, suites: [], files: {}, refused: [], notes: [] };
}

/** Writes the plan's files under `dir`; refuses (before writing any) when one exists. */
export async function writePlan(dir: string, plan: ImportPlan): Promise<string[]> {
  const files: [string, string][] = [
    ...plan.suites.map((s): [string, string] => [s.file, `${JSON.stringify(s.suite, null, 2)}\n`]),
    ...Object.entries(plan.files),
  ];
  const taken = files.filter(([path]) => existsSync(join(dir, path)));
  if (taken.length > 0)
    throw new ImportError(
      `${taken.map(([p]) => join(dir, p)).join(', ')} already exist${taken.length === 1 ? 's' : ''}: import into a new folder (--out DIR)`,
    );
  for (const [path, text] of files) {
    const target = join(dir, path);
    if (relative(dir, target).startsWith('..'))
      throw new ImportError(`${path} would be written outside ${dir}`);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, text);
  }
  return files.map(([path]) => join(dir, path));
}

/** Where a suite folder's prompt file `name` is written: its prompts folder, where suites look first. */
export function promptPath(name: string): string {
  return `${PROMPT_PREFIX}${name}`;
}

/** The objects of a JSON Lines text, blank lines skipped; a line that is not JSON names the file and line. */
export function jsonLines(text: string, path: string, what = 'a line'): Record<string, unknown>[] {
  return text.split('\n').flatMap((line, i) => {
    if (line.trim() === '') return [];
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch (error) {
      throw new ImportError(`${path}, line ${i + 1}: ${what} is not JSON: ${(error as Error).message}`);
    }
  });
}

/** JSON Lines of rows. */
export function jsonl(rows: readonly Record<string, unknown>[]): string {
  return rows.map((row) => `${JSON.stringify(row)}\n`).join('');
}

/** A name Assay's placeholders accept (`{a_b}`), from any expression (`item.a.b` → `a_b`). */
export function columnName(path: string): string {
  const name = path.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^[^A-Za-z]+/, '');
  return name === '' ? 'field' : name;
}

/** A tag name for a placeholder's section: lower case, as prompt tags are. */
const tagOf = (name: string) => name.toLowerCase().replace(/[^a-z0-9_-]/g, '_');

/** `{{ expr }}` (Mustache, Jinja and Nunjucks, OpenAI's graders), with an optional `| filter`. */
const MUSTACHE = /\{\{\s*([^{}|]+?)\s*(?:\|[^{}]*)?\}\}/g;
/** `{name}` (Python's str.format, openai/evals' specs). */
const PYTHON_FIELD = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * A template's placeholders in Assay's form: each expression `resolve` names a column for
 * becomes `{column}` — inside its own tag section when `tagged` (a prompt: dataset text must sit
 * alone in a section) — and one it cannot gives the reason the template cannot be imported.
 */
export function convertTemplate(
  text: string,
  syntax: 'mustache' | 'python',
  resolve: (expression: string) => string | { refuse: string },
  tagged: boolean,
): { text: string } | { refuse: string } {
  let refusal: string | undefined;
  const converted = text.replace(
    syntax === 'mustache' ? MUSTACHE : PYTHON_FIELD,
    (_whole, expression: string) => {
      const column = resolve(expression.trim());
      if (typeof column !== 'string') {
        refusal ??= column.refuse;
        return '';
      }
      return tagged ? `<${tagOf(column)}>{${column}}</${tagOf(column)}>` : `{${column}}`;
    },
  );
  return refusal === undefined ? { text: converted } : { refuse: refusal };
}

/** Chat messages as one prompt text: each message's role as a heading, its content below. */
export function messagesText(messages: readonly { role?: string; content?: unknown }[]): string {
  return messages
    .map(
      (m) => `${m.role ?? 'user'}:\n${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`,
    )
    .join('\n\n');
}
