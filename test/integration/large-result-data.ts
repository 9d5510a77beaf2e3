/**
 * A judge suite on rows whose results do not fit a DynamoDB item as they come, shared by the
 * large-result tests of both shells:
 *
 * - `wide`: 30 fields of 15,000 characters (each under `dataset.maxFieldChars`): 451 KB of
 *   result before its stored inputs are cut to 128,000 characters;
 * - `dense`: the same, of characters that take 3 bytes (語) and 6 (ESC, `\u001b` in JSON):
 *   over 400 KB of JSON even cut, which the AWS store keeps deflated in its item;
 * - `many`: 9,000 columns of 50 ESC characters, each too short to cut: 2.6 MB, more than a
 *   stored result may hold, so it fails as `storage`, saying by how much;
 * - `small`: an ordinary row.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** `n` columns `<prefix>1…` of `chars` characters, each its own text made of `alphabet`. */
function columns(n: number, chars: number, prefix: string, alphabet: string): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => {
      const name = `${prefix}${i + 1}`;
      return [name, `${name}:`.padEnd(chars, alphabet)];
    }),
  );
}

/** The dataset's rows, in order: the ids the tests look results up by. */
export const LARGE_ROWS = ['wide', 'small', 'dense', 'many'] as const;

/** The JSONL dataset (one row each of {@link LARGE_ROWS}). */
export function largeDataset(): string {
  const rows = [
    { id: 'wide', question: 'q'.padEnd(15_000, 'why? '), human: 'yes', ...columns(29, 15_000, 'c', 'abc ') },
    { id: 'small', question: 'Is this short?', human: 'no', topic: 'plain' },
    {
      id: 'dense',
      question: 'd'.padEnd(15_000, '\x1b語'),
      human: 'no',
      ...columns(29, 15_000, 'c', '\x1b語'),
    },
    { id: 'many', question: 'Many columns?', human: 'yes', ...columns(9_000, 50, 'x', '\x1b') },
  ];
  return `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`;
}

/** The suite (its backends as given), its prompt and its dataset written into `dir`; the suite's path. */
export async function writeLargeSuite(dir: string, name: string, backends: string[]): Promise<string> {
  await mkdir(join(dir, 'prompts'), { recursive: true });
  await writeFile(
    join(dir, 'prompts', 'large-judge.md'),
    'Answer yes or no.\n\n<question>\n{question}\n</question>\n',
  );
  await writeFile(join(dir, 'data.jsonl'), largeDataset());
  const suitePath = join(dir, `${name}.suite.json`);
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name,
      task: 'judge',
      dataset: { path: 'data.jsonl', columns: { gold: 'human', question: 'question' } },
      judge: { prompt: 'prompts/large-judge.md', labels: ['yes', 'no'] },
      backends,
    }),
  );
  return suitePath;
}
