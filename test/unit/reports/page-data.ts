/** Reading back what the report tests wrote: a page's embedded data, its table's columns, a stored file. */
import type { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { reader } from '../../../shared/reports/html/page/dom.js';
import type { Column, ItemTable } from '../../../shared/reports/html/types.js';

/** The embedded data of a run page. */
export function pageData(html: string): { report: unknown; items: ItemTable } {
  const json = /<script type="application\/json" id="assay-data">([\s\S]*?)<\/script>/.exec(html)?.[1];
  if (!json) throw new Error('no data in the page');
  return JSON.parse(json);
}

/** Every column of a table as plain values, row by row, whatever the column's encoding. */
export function plainColumns(items: ItemTable): Record<string, unknown[]> {
  return Object.fromEntries(
    Object.entries(items.columns).map(([name, column]) => {
      const read = reader(column as Column<unknown>);
      return [name, Array.from({ length: items.n }, (_, i) => read(i))];
    }),
  );
}

export async function text(store: FolderBlobStore, key: string): Promise<string> {
  return new TextDecoder().decode(await store.get(key));
}
