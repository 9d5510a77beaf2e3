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

/**
 * The command as the user types it: `npx assay` when this Assay runs through npx (or npm exec),
 * or is a project's dependency (node_modules/.bin, not on the PATH); `assay` otherwise (a global
 * install, a development clone).
 */
export function assayCommand(env: NodeJS.ProcessEnv = process.env, root: string = PACKAGE_ROOT): string {
  if (env.npm_command === 'exec' || env.npm_lifecycle_event === 'npx') return 'npx assay';
  const parts = root.split(/[\\/]/);
  const at = parts.lastIndexOf('node_modules');
  // A global install lives in <prefix>/lib/node_modules (npm's folder itself on Windows).
  const global = at > 0 && (parts[at - 1] === 'lib' || parts[at - 1] === 'npm');
  return at >= 0 && !global ? 'npx assay' : 'assay';
}
