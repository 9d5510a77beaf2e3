/** `assay schema`: the suite JSON Schema and the families' own formats, written into a folder. */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { publishedSchemas } from '../../shared/registry/suite.js';

export async function schemaCommand(flags: { out: string }): Promise<void> {
  const dir = resolve(flags.out);
  await mkdir(dir, { recursive: true });
  for (const [file, schema] of Object.entries(publishedSchemas())) {
    await writeFile(join(dir, file), `${JSON.stringify(schema, null, 2)}\n`);
    process.stdout.write(`wrote ${join(dir, file)}\n`);
  }
}
