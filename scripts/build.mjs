/**
 * Builds the `assay` command into dist/: cli/main.ts and everything it imports from this
 * repository, bundled by esbuild as ESM, with one chunk per lazily imported command so that
 * `assay --help` loads only the small entry chunk and commander. Packages from node_modules
 * stay imports (the package's dependencies provide them; onnxruntime-node is an optional peer).
 *
 *   node scripts/build.mjs           build (run by `npm ci`/`npm pack` through `prepare`, and
 *                                    before every vitest run: globalSetup in vitest.config.ts)
 *
 * bin/assay.mjs calls {@link ensureBuilt} in a development clone, so that edited sources are
 * never run from a stale dist/.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = join(ROOT, 'dist');
const ENTRY = join(ROOT, 'cli', 'main.ts');
/** Written last by a build: the newest source modification time (ms) it was built from. */
const STAMP = join(DIST, '.built');
/** The folders whose files go into the bundle. */
const SOURCE_DIRS = ['cli', 'shared', 'functions'];

/** The newest modification time (ms) of the bundled sources and of this script. */
function newestSource() {
  let newest = statSync(fileURLToPath(import.meta.url)).mtimeMs;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of SOURCE_DIRS) walk(join(ROOT, dir));
  return newest;
}

/** True when dist/ holds a build at least as new as every source file. */
export function isFresh() {
  let builtFrom;
  try {
    builtFrom = Number(readFileSync(STAMP, 'utf8'));
  } catch {
    return false;
  }
  return builtFrom >= newestSource();
}

/** The package names a module specifier refers to (`@scope/name/sub` → `@scope/name`). */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Bundles into dist/. Each file is written beside its final name and renamed into place, the
 * entry last, so that a process starting meanwhile reads either the old build or the new one.
 * Chunks of earlier builds are removed afterwards.
 */
export async function build({ quiet = false } = {}) {
  const started = performance.now();
  // Taken before reading the sources: a file edited during the build makes the next run build again.
  const builtFrom = newestSource();
  const { build: esbuild } = await import('esbuild').catch((error) => {
    throw new Error(
      `cannot build dist/ from the sources: esbuild is not installed (run npm ci in ${ROOT}): ${error.message}`,
    );
  });
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const result = await esbuild({
    entryPoints: { main: ENTRY },
    outdir: DIST,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    // Chunks sit beside the entry: code that finds the package root from its own file
    // (one folder up, as from cli/ or functions/) finds it from any of them.
    chunkNames: '[name]-[hash]',
    metafile: true,
    write: false,
    legalComments: 'none',
    logLevel: 'warning',
  });
  // Every package the bundle imports must be one the installed package brings (or names).
  const provided = new Set([
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.optionalDependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
  ]);
  const missing = new Set();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const imported of output.imports) {
      if (!imported.external || imported.path.startsWith('node:')) continue;
      if (!provided.has(packageOf(imported.path))) missing.add(imported.path);
    }
  }
  if (missing.size > 0) {
    throw new Error(
      `the bundle imports packages that package.json does not list in dependencies: ${[...missing].join(', ')}`,
    );
  }
  const ENTRY_OUT = join(DIST, 'main.js');
  const files = [...result.outputFiles].sort(
    (a, b) => Number(a.path === ENTRY_OUT) - Number(b.path === ENTRY_OUT),
  );
  for (const file of files) {
    mkdirSync(dirname(file.path), { recursive: true });
    const temp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temp, file.contents);
    renameSync(temp, file.path);
  }
  writeFileSync(STAMP, `${builtFrom}\n`);
  const written = new Set(files.map((f) => f.path));
  for (const name of readdirSync(DIST)) {
    const path = join(DIST, name);
    if (name.endsWith('.js') && !written.has(path)) unlinkSync(path);
  }
  if (!quiet) {
    const bytes = files.reduce((sum, f) => sum + f.contents.length, 0);
    process.stderr.write(
      `built ${relative(ROOT, DIST)}/ (${files.length} files, ${Math.round(bytes / 1024)} KB) in ${Math.round(performance.now() - started)} ms\n`,
    );
  }
}

/** Builds unless dist/ is already at least as new as the sources. */
export async function ensureBuilt(options) {
  if (!isFresh()) await build(options);
}

/** Vitest's globalSetup: every test run builds first (tests run `node bin/assay.mjs`). */
export async function setup() {
  await build({ quiet: true });
}

if (process.argv[1] && basename(process.argv[1]) === basename(fileURLToPath(import.meta.url))) {
  // An installed package has no sources to build (and no esbuild): its dist/ came built.
  if (existsSync(ENTRY)) await build();
}
