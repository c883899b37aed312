import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Slow fault tests (kill -9, damaged files, full disk) are their own part: vitest.faults.config.ts.
    exclude: ['test/faults/**', '**/node_modules/**'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // One file at a time: live-delivery tests (subset snapshots on a stream) were seen to fail while a heavy file ran beside them.
    maxWorkers: 1,
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]]
  }
})
