import { defineConfig } from 'vitest/config'
import faults from './vitest.faults.config.mts'

/**
 * Tests that run for minutes (the long form of the randomized subquery test): `npm run test:faults` runs them after
 * the fault tests; `npm test` runs their short forms only. The fault tests' settings, its own files and reports.
 */
export default defineConfig({
  test: {
    ...faults.test,
    include: ['test/soak/**/*.test.ts'],
    testTimeout: 600_000,
    reporters: [
      'default',
      ['json', { outputFile: 'test-results/vitest-soak.json' }],
      ['./test/support/counting-reporter.ts', { outputFile: 'test-results/vitest-soak-counts.json' }]
    ]
  }
})
