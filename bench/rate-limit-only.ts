/**
 * The rate-limit part of the bench alone: 3,000 RPM enforced by the fake, 1,500 items at C = 32,
 * the limit declared, undeclared with OpenAI's headers, and undeclared without them.
 *
 *   npx tsx bench/rate-limit-only.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rateLimitFigures } from './parts/rate-limit.js';
import { renderTable } from './parts/table.js';

const dir = await mkdtemp(join(tmpdir(), 'assay-rate-limit-'));
try {
  const { cases, checks } = await rateLimitFigures(dir);
  process.stdout.write(`${renderTable(checks)}\n\n${JSON.stringify(cases, null, 2)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
