import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // tests live in test/<room>/ (docs/architecture.md, Tests); lint refuses a test file under src/
    include: ['test/**/*.test.ts'],
    // Slow fault tests (kill -9, damaged files, full disk) are their own part: vitest.faults.config.mts.
    exclude: ['test/faults/**', 'test/soak/**', '**/node_modules/**'],
    environment: 'node',
    // the time limits of a file: each test and each hook (a hung run is ended by scripts/test.mjs)
    testTimeout: 60_000,
    // expect.poll waits for a signal: up to 15 s, not vitest's 1 s, which a loaded machine can overrun
    expect: { poll: { timeout: 15_000 } },
    hookTimeout: 120_000,
    pool: 'forks',
    // fails a test file that leaves an embedded cluster in the tests' clusters folder (as root; clusters-root.ts)
    setupFiles: ['test/support/leftover-clusters.ts'],
    // tests spawn bin/syncscope.js, which runs the built CLI (out/main/cli.js)
    globalSetup: ['test/support/build-app.ts', 'test/support/clusters-root.ts'],
    // Two files at a time on CI's 2 cores: most of a file's time is spent waiting on Postgres, servers and child
    // processes, and no test measures the wall clock tightly (a test waits on signals; benches under bench/ time).
    maxWorkers: 2,
    reporters: [
      'default',
      // per-file durations
      ['json', { outputFile: 'test-results/vitest.json' }],
      // what scripts/test.mjs counts: a test a failed hook kept from running is failed, not skipped
      ['./test/support/counting-reporter.ts', { outputFile: 'test-results/vitest-counts.json' }]
    ]
  }
})
