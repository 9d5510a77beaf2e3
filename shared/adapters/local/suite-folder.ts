import { readFile, realpath, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { BlobRead } from '../../ports/ports.js';
import { FolderBlobStore, readFileRange } from './folder-blob-store.js';

/**
 * A suite's files as a local run reads them: by their real path (symlinks resolved), so what
 * is checked is what is read. A file outside the suite's folder, named so (`../shared/x.md`,
 * `/etc/hostname`) or reached through a symlink inside it, is read all the same (a local run
 * may use any file its user can), but said on screen, so a suite shared with someone never
 * reads their files unseen.
 */

/** Where a file a suite reads really is, and whether that lies outside the suite's folder. */
export interface ResolvedFile {
  /** The real path: every symlink resolved. */
  path: string;
  outside: boolean;
}

/** Resolves `path` (relative to the suite's folder) to its real path; undefined when there is no such file. */
export async function resolveSuiteFile(suiteDir: string, path: string): Promise<ResolvedFile | undefined> {
  let real: string;
  try {
    real = await realpath(resolve(suiteDir, path));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
  const folder = await realpath(resolve(suiteDir)).catch(() => resolve(suiteDir));
  return { path: real, outside: real !== folder && !real.startsWith(folder + sep) };
}

/** Says, once per file in this process, that a suite reads a file outside its folder. */
export type OutsideNotice = (what: string, realPath: string) => void;

const told = new Set<string>();

/** The notice a local run gives: a warning line on stderr naming the real path, once per file. */
export const warnOnStderr: OutsideNotice = (what, realPath) => {
  if (told.has(realPath)) return;
  told.add(realPath);
  process.stderr.write(`warning: ${what} reads ${realPath}, outside the suite's folder\n`);
};

/**
 * The suite's folder as a store of `prompts/<path>` (and any key under it): each key resolved
 * to its real path, read from there, and a file outside the folder given to `notice`. Keys may
 * climb out of the folder (`prompts/../../shared/x.md`), as a local path may.
 */
export class SuiteFolderStore extends FolderBlobStore {
  constructor(
    root: string,
    private readonly notice: OutsideNotice = warnOnStderr,
  ) {
    super(root);
  }

  private async real(key: string): Promise<string | undefined> {
    const file = await resolveSuiteFile(this.root, key);
    if (file?.outside) this.notice(key, file.path);
    return file?.path;
  }

  override async get(key: string): Promise<Uint8Array | undefined> {
    const path = await this.real(key);
    if (path === undefined) return undefined;
    try {
      return await readFile(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A folder where a file was expected, or a file gone since: not there.
      if (code === 'ENOENT' || code === 'EISDIR') return undefined;
      throw error;
    }
  }

  override async read(
    key: string,
    options: { start?: number; end?: number; version?: string } = {},
  ): Promise<BlobRead | undefined> {
    const path = await this.real(key);
    if (path === undefined) return undefined;
    const info = await stat(path);
    if (info.isDirectory()) return undefined;
    return readFileRange(key, path, info, options);
  }
}
