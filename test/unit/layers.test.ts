/**
 * The layer rules (`.dependency-cruiser.cjs`, run by `npm run check`) catch what they are for:
 * an import that points upward and a cycle closed by a type import. Each case is a tiny tree in
 * a temp folder, cruised with the repository's own rules.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO, tempDir } from '../helpers.js';

const run = promisify(execFile);
const CRUISE = join(REPO, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

async function cruise(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const dir = await tempDir('assay-layers-');
  await copyFile(join(REPO, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  await copyFile(join(REPO, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  try {
    const { stdout } = await run(
      process.execPath,
      [CRUISE, 'shared', '--config', '.dependency-cruiser.cjs'],
      {
        cwd: dir,
      },
    );
    return { code: 0, output: stdout };
  } catch (error) {
    const e = error as { code: number; stdout: string };
    return { code: e.code, output: e.stdout };
  }
}

describe('layer rules', () => {
  it('fail an upward type import, an adapter on a use-case, a family on another, a type-only cycle; pass imports that point down', async () => {
    const result = await cruise({
      'shared/model/item.ts':
        "import type { Suite } from '../registry/suite.js';\nexport type Item = { suite: Suite };\n",
      'shared/registry/suite.ts':
        "import type { Score } from '../model/score.js';\nexport type Suite = { name: string; s?: Score };\n",
      'shared/model/score.ts': 'export type Score = { value: number };\n',
      'shared/use-cases/finish.ts': 'export const finish = () => 1;\n',
      'shared/adapters/local/store.ts':
        "import { finish } from '../../use-cases/finish.js';\nexport const s = finish;\n",
      'shared/families/qa/task.ts': "import { x } from '../gec/task.js';\nexport const y = x;\n",
      'shared/families/gec/task.ts': 'export const x = 1;\n',
      'shared/lib/metrics/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\n",
      'shared/lib/metrics/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
    });
    expect(result.code).not.toBe(0);
    const violations = result.output
      .split('\n')
      .filter((line) => /^\s*error /.test(line))
      .map((line) => line.trim().replace(/\s+/g, ' '))
      .sort();
    expect(violations).toEqual([
      'error adapters-import-model-ports-lib-only: shared/adapters/local/store.ts → shared/use-cases/finish.ts',
      'error families-are-independent: shared/families/qa/task.ts → shared/families/gec/task.ts',
      'error model-imports-upward: shared/model/item.ts → shared/registry/suite.ts',
      'error no-circular: shared/lib/metrics/a.ts →',
    ]);
  });
});
