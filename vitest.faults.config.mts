import { defineConfig } from 'vitest/config'
import unit from './vitest.config'

/**
 * The slow fault tests: kill -9 of Postgres and of the server, damaged files, a full disk. `npm run test:faults`. The
 * unit tests' settings (pool, setup, two files at a time), with their own files, time limits and reports.
 */
export default defineConfig({
  test: {
    ...unit.test,
    include: ['test/faults/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    // the time limits of a file: each test and each hook (a hung run is ended by scripts/test.mjs)
    testTimeout: 180_000,
    hookTimeout: 180_000,
    reporters: [
      'default',
      ['json', { outputFile: 'test-results/vitest-faults.json' }],
      ['./test/support/counting-reporter.ts', { outputFile: 'test-results/vitest-faults-counts.json' }]
    ]
  }
})
