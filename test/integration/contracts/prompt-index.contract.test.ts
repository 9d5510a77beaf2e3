/**
 * The PromptIndex contract: which suites read a prompt file, as ingest keeps it (a suite's
 * paths replaced on each upload, idempotently) and as a prompt upload asks it (the suites to
 * run again, sorted). In memory (the local shell needs none: `assay run --changed` reads the
 * runs folder) and in DynamoDB alike.
 */
import { describe, expect, it } from 'vitest';
import { DynamoPromptIndex } from '../../../shared/adapters/aws/dynamo-prompt-index.js';
import { MemoryPromptIndex } from '../../../shared/adapters/local/memory-prompt-index.js';
import type { PromptIndex } from '../../../shared/ports/ports.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-prompts');

const adapters: [string, () => Promise<PromptIndex>][] = [
  ['memory', async () => new MemoryPromptIndex()],
  ['dynamodb', async () => new DynamoPromptIndex({ client: aws().clients.doc, tableName: aws().res.table })],
];

describe.each(adapters)('PromptIndex contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('finds the suites that read a prompt, sorted; a prompt nobody reads has none', async () => {
    const index = await make();
    const [shared, own] = [`gec/${fresh('shared')}.md`, `qa/${fresh('own')}.md`];
    const [b, a] = [fresh('suite-b'), fresh('suite-a')];
    await index.setSuitePrompts(b, [shared, own]);
    await index.setSuitePrompts(a, [shared]);
    expect(await index.suitesUsing(shared)).toEqual([a, b].sort());
    expect(await index.suitesUsing(own)).toEqual([b]);
    expect(await index.suitesUsing(`gec/${fresh('unread')}.md`)).toEqual([]);
  });

  it("replaces a suite's prompts: a path it no longer reads forgets it, a new one learns it", async () => {
    const index = await make();
    const suite = fresh('suite');
    const [old, kept, added] = [
      `judge/${fresh('old')}.md`,
      `judge/${fresh('kept')}.md`,
      `judge/${fresh('added')}.md`,
    ];
    await index.setSuitePrompts(suite, [old, kept]);
    await index.setSuitePrompts(suite, [kept, added]);
    expect(await index.suitesUsing(old)).toEqual([]);
    expect(await index.suitesUsing(kept)).toEqual([suite]);
    expect(await index.suitesUsing(added)).toEqual([suite]);
    // No prompts at all: the suite is in no path's list.
    await index.setSuitePrompts(suite, []);
    expect(await index.suitesUsing(kept)).toEqual([]);
    expect(await index.suitesUsing(added)).toEqual([]);
  });

  it('is idempotent: the same set again (a redelivered upload), or a path given twice, changes nothing', async () => {
    const index = await make();
    const [suite, other] = [fresh('suite'), fresh('other')];
    const path = `gec/${fresh('p')}.md`;
    await index.setSuitePrompts(suite, [path, path]);
    await index.setSuitePrompts(suite, [path]);
    await index.setSuitePrompts(other, [path]);
    await index.setSuitePrompts(other, [path]);
    expect(await index.suitesUsing(path)).toEqual([other, suite].sort());
  });
});
