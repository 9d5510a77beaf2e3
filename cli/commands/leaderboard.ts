/** `assay leaderboard`: the finished runs side by side, from the runs folder or the stack's table. */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { LocalLeaderboard } from '../../shared/adapters/local/local-sweeps.js';
import type { Leaderboard } from '../../shared/ports/ports.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { renderPage } from '../../shared/reports/html/render.js';
import { leaderboardTables, renderLeaderboard } from '../../shared/reports/leaderboard.js';

export async function leaderboardCommand(flags: {
  runs: string;
  table?: string;
  dataset?: string;
  json?: boolean;
  html?: string;
}): Promise<void> {
  let leaderboard: Leaderboard = new LocalLeaderboard(resolve(flags.runs), validateSuite);
  if (flags.table) {
    // Loaded on demand: the AWS SDK is only needed to read the stack's table.
    const { createAwsClients } = await import('../../shared/adapters/aws/clients.js');
    const { DynamoLeaderboard } = await import('../../shared/adapters/aws/dynamo-sweeps.js');
    const clients = createAwsClients({ AWS_ENDPOINT_URL: process.env.AWS_ENDPOINT_URL });
    leaderboard = new DynamoLeaderboard({ client: clients.doc, tableName: flags.table });
  }
  const tables = leaderboardTables(await leaderboard.entries(), flags.dataset);
  if (leaderboard instanceof LocalLeaderboard) process.stderr.write(leaderboard.searched());
  process.stdout.write(flags.json ? `${JSON.stringify({ tables }, null, 2)}\n` : renderLeaderboard(tables));
  if (flags.html) {
    const page = renderPage('Assay leaderboard', {
      kind: 'leaderboard',
      tables: tables as unknown as Record<string, unknown>[],
    });
    await writeFile(flags.html, page);
    process.stderr.write(`wrote ${resolve(flags.html)}\n`);
  }
}
