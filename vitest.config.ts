import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ before any test: the CLI tests run `node bin/assay.mjs`, which runs dist/.
    globalSetup: ['scripts/build.mjs'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Integration files each start their own moto_server; two at a time suits a 2-core machine.
    maxWorkers: 2,
  },
});
