import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of the package.json nearest above `from`: the repository in a development clone
 * (code in cli/), the installed package (code bundled in dist/).
 */
export function packageRootOf(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/** The package root: what ships beside the code (prompts/, examples/, schemas/, templates/). */
export const PACKAGE_ROOT = packageRootOf(dirname(fileURLToPath(import.meta.url)));
