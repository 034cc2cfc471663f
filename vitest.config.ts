// Two suites: fast unit tests, and integration tests against real local servers (Azurite, Cosmos-compatible).
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Vitest's default is one worker fewer than the cores: one at a time on a 2-core machine. Most files
    // wait on servers and child processes (the quick start's clean install in a fresh clone, the package
    // build), so two at a time finish the suite sooner; the tests hold under that load (run side by side).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 20_000 } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
