/** `--junit FILE` and `--markdown FILE`: the CI reports of a run, a sweep or a comparison, written where asked. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

export interface CiReportFlags {
  junit?: string;
  markdown?: string;
}

/**
 * Writes the reports the flags ask for (their folders made as needed) and says where on stderr.
 * Called before the command decides its exit code, so a failing gate still leaves both files.
 */
export async function writeCiReports(
  flags: CiReportFlags,
  render: { junit: () => string; markdown: () => string },
): Promise<void> {
  const wanted: [string | undefined, () => string][] = [
    [flags.junit, render.junit],
    [flags.markdown, render.markdown],
  ];
  for (const [path, body] of wanted) {
    if (path === undefined) continue;
    const file = resolve(path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, body(), 'utf8');
    process.stderr.write(`wrote ${path}\n`);
  }
}
