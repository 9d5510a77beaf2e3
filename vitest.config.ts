import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Builds dist/ before any test: the CLI tests run `node bin/assay.mjs`, which runs dist/.
    globalSetup: ['scripts/build.mjs'],
    // Hang guards, not speed checks: many tests start the CLI, moto or a synth, which on a
    // loaded 2-core machine take far longer than when it is idle.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Two at a time suits a 2-core machine.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/unit/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          // These files leave no global state behind (fake clocks and env are put back), so a
          // worker runs one after another in the same module graph: the SDKs, zod and the
          // families are imported once per worker rather than once per file.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // Each file loads the Lambda handlers, whose composition roots read the environment
          // once: a fresh module graph per file. moto_server: one per worker for the whole run.
          isolate: true,
          globalSetup: ['test/integration/moto-global-setup.ts'],
        },
      },
    ],
  },
});
