/**
 * What hostile data, names and settings can no longer do, each at the one place it is stopped:
 * the CSV cell (no raw control byte, no formula after a separator a spreadsheet splits on) and
 * the gold file reader taking the guard back off; a progress line quoting a vendor's batch
 * status; a model answer echoing a key; a base URL carrying a password; a log file that is a
 * symbolic link.
 */
import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { progressReporter } from '../../cli/progress.js';
import { JsonLinesWriter, LinkedFileError, readJsonLines } from '../../shared/adapters/local/jsonl.js';
import { readGoldFile } from '../../shared/lib/datasets/gold-file.js';
import type { RawRow } from '../../shared/lib/datasets/read.js';
import { buildCompletion } from '../../shared/lib/providers/normalise.js';
import { EMBEDDED_PRICES } from '../../shared/lib/providers/pricing.js';
import { createProvider } from '../../shared/lib/providers/registry.js';
import { guardFormulas, unguardFormulas } from '../../shared/model/csv-guard.js';
import { ConfigError } from '../../shared/model/errors.js';
import { redactKnownSecrets, redactSecrets, rememberSecret } from '../../shared/model/secrets.js';
import { csvCell, labelCsvCell } from '../../shared/reports/csv-cell.js';
import { tempDir } from '../helpers.js';

describe('the CSV cell', () => {
  it('guards a formula after a semicolon, a tab, a comma or a line break inside the cell', () => {
    expect(csvCell('fine;=1+2')).toBe(`"fine;'=1+2"`);
    expect(csvCell('fine; =1+2')).toBe(`"fine; '=1+2"`);
    expect(csvCell('ok\t@SUM(1)')).toBe(`"ok\t'@SUM(1)"`);
    expect(csvCell('a,+cmd|calc')).toBe(`"a,'+cmd|calc"`);
    expect(csvCell('a,-2+3+cmd|calc')).toBe(`"a,'-2+3+cmd|calc"`);
    expect(csvCell('line\n=1+1')).toBe(`"line\n'=1+1"`);
    expect(csvCell('x;＝1+1')).toBe(`"x;'＝1+1"`);
    // A cell's own start, as before.
    expect(csvCell('=1+1')).toBe("'=1+1");
  });

  it('keeps bare numbers after a separator, so JSON and prose stay as they are', () => {
    expect(csvCell('[1,-2,+3.5e2,-4]')).toBe('"[1,-2,+3.5e2,-4]"');
    expect(csvCell('{"a":[0.1,-0.2]}')).toBe('"{""a"":[0.1,-0.2]}"');
    expect(csvCell('scores 1, -2')).toBe('"scores 1, -2"');
    expect(csvCell('a-b;c')).toBe('"a-b;c"');
  });

  it('writes control characters visibly: no raw ESC, CR or C1 byte', () => {
    const cell = csvCell('\x1b]0;pwned\x07\x1b[2Jtext\r\u009b');
    expect(cell).toBe(String.raw`"\x1b]0;pwned\x07\x1b[2Jtext\x0d\x9b"`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(cell).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });

  it('the label export guards formulas but keeps the text byte for byte otherwise', () => {
    expect(labelCsvCell('=1+1')).toBe("'=1+1");
    expect(labelCsvCell('@SUM(1)')).toBe("'@SUM(1)");
    expect(labelCsvCell('a;=b')).toBe(`"a;'=b"`);
  });

  it('takes exactly the apostrophes it added back off', () => {
    const texts = [
      '=1+1',
      "'=1+1",
      "''@x",
      'a;=b',
      "a; ''=b",
      '\tx',
      '-2',
      '[1,-2]',
      "x,'-2",
      'plain',
      "it's",
      'a,+b;-c\t@d\n=e',
    ];
    for (const text of texts) expect(unguardFormulas(guardFormulas(text)), text).toBe(text);
  });

  it('the gold file reader merges a guarded id and label back to the dataset’s own', async () => {
    async function* rows(): AsyncGenerator<RawRow> {
      yield { row: 1, line: 2, record: { id: "'=1+1", label: "'-1", p: '0.5' } };
      yield { row: 2, line: 3, record: { id: "fine;'=2", label: 'polite' } };
    }
    const labels = await readGoldFile(rows(), 'labels.csv');
    expect([...labels]).toEqual([
      ['=1+1', { label: '-1', p: 0.5 }],
      ['fine;=2', { label: 'polite' }],
    ]);
  });
});

describe('progress lines', () => {
  it('show a vendor’s batch status and a backend name with their escapes written visibly', () => {
    const written: string[] = [];
    const stream = { isTTY: false, write: (text: string) => written.push(text) } as never;
    const report = progressReporter(stream);
    report({
      runId: 'r',
      type: 'started',
      run: { runId: 'r', simulated: false, suite: { backends: ['openai:x\x1b[2J'] } } as never,
      outDir: 'out\x1b]0;t\x07',
      total: 1,
      alreadyDone: 0,
      queued: 1,
      invalidRows: 0,
    });
    report({
      runId: 'r',
      type: 'batch',
      event: {
        type: 'polled',
        batchId: 'b\x1b[1A',
        backend: 'openai:x',
        status: 'in_progress\x1b]0;pwned\x07',
      },
    });
    report({
      runId: 'r',
      type: 'batch',
      event: { type: 'submit_failed', backend: 'openai:x', requests: 2, error: 'nope\x1b[2J\u009b' },
    });
    const text = written.join('');
    expect(text).not.toContain('\x1b');
    expect(text).not.toContain('\u009b');
    expect(text).toContain(String.raw`with openai:x\x1b[2J`);
    expect(text).toContain(String.raw`→ out\x1b]0;t\x07`);
    expect(text).toContain(String.raw`batch b\x1b[1A (openai:x): in_progress\x1b]0;pwned\x07`);
    expect(text).toContain(String.raw`(nope\x1b[2J\x9b)`);
  });
});

describe('a key in a model answer', () => {
  it('is redacted when the completion is built; prose that only looks like a credential is not', () => {
    rememberSecret('sk-lower-findings-KEY-0001');
    const completion = buildCompletion({
      providerId: 'openai:gpt-4o-mini',
      text: '{"label":"polite","reason":"the key is sk-lower-findings-KEY-0001"}',
      finishReason: 'stop',
      usage: { input: 1, output: 1, cached: 0 },
      latencyMs: 1,
      prices: EMBEDDED_PRICES,
    });
    expect(completion.text).toBe('{"label":"polite","reason":"the key is [redacted]"}');
    const prose = 'Basic knowledge helps; set api_key = value in the config.';
    expect(redactKnownSecrets(prose)).toBe(prose);
    // The error net is wider on purpose (errors are not scored).
    expect(redactSecrets(prose)).not.toBe(prose);
  });
});

describe('a base URL with a user name and password', () => {
  const env = (extra: Record<string, string>) => ({
    OPENAI_API_KEY: 'sk-test-000000000',
    ANTHROPIC_API_KEY: 'sk-ant-test-000000',
    ...extra,
  });

  it('is refused when the provider is built, naming the variable and never the password', () => {
    for (const [id, name] of [
      ['openai:gpt-4o-mini', 'OPENAI_BASE_URL'],
      ['anthropic:claude-3-5-haiku-latest', 'ANTHROPIC_BASE_URL'],
      ['vllm:some/model', 'VLLM_BASE_URL'],
    ] as const) {
      let error: unknown;
      try {
        createProvider(id, {
          env: env({ [name]: 'https://user:pa%24%24word-1@host.example/v1' }),
          prices: EMBEDDED_PRICES,
        });
      } catch (e) {
        error = e;
      }
      expect(error, id).toBeInstanceOf(ConfigError);
      const message = (error as Error).message;
      expect(message).toContain(`${name} holds a user name or password`);
      expect(message).toContain('host.example/v1');
      expect(message).not.toMatch(/pa%24%24word|pa\$\$word|\/\/user/);
      // The password is a secret of this process now: no later message carries it.
      expect(redactSecrets('failed: pa$$word-1')).toBe('failed: [redacted]');
    }
  });

  it('is taken as it is without credentials', () => {
    const provider = createProvider('openai:gpt-4o-mini', {
      env: env({ OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1' }),
      prices: EMBEDDED_PRICES,
    });
    expect(provider.endpoint).toBe('http://127.0.0.1:8000/v1');
  });
});

describe('a log file that is a symbolic link', () => {
  it('is neither appended nor read through', async () => {
    const dir = await tempDir('assay-lower-');
    const target = join(dir, 'target.jsonl');
    await writeFile(target, '{"n":1}\n');
    const link = join(dir, 'results.jsonl');
    await symlink(target, link);
    await expect(new JsonLinesWriter(link).append({ n: 2 })).rejects.toBeInstanceOf(LinkedFileError);
    await expect(readJsonLines(link)).rejects.toThrow(`${link} is a symbolic link`);
    expect(await readFile(target, 'utf8')).toBe('{"n":1}\n');
  });
});
