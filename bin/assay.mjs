#!/usr/bin/env node
// The `assay` command: runs the CLI built into dist/ (scripts/build.mjs). In a development
// clone (the TypeScript sources beside it) it first rebuilds dist/ if a source is newer, so
// edited code never runs stale; the installed package ships dist/ alone.
import { existsSync } from 'node:fs';

if (existsSync(new URL('../cli/main.ts', import.meta.url))) {
  const { ensureBuilt } = await import('../scripts/build.mjs');
  await ensureBuilt({ quiet: true });
}
await import('../dist/main.js');
