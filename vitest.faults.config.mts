import { defineConfig } from 'vitest/config'

/** The slow fault tests: kill -9 of Postgres and of the server, damaged files, a full disk. `npm run test:faults`. */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    environment: 'node',
    // the time limits of a file: each test and each hook (a hung run is ended by scripts/test.mjs)
    testTimeout: 180_000,
    // expect.poll waits for a signal: up to 15 s, not vitest's 1 s, which a loaded machine can overrun
    expect: { poll: { timeout: 15_000 } },
    hookTimeout: 180_000,
    pool: 'forks',
    // fails a test file that leaves an embedded cluster in the tests' clusters folder (as root; clusters-root.ts)
    setupFiles: ['test/support/leftover-clusters.ts'],
    // tests spawn bin/syncscope.js, which runs the built CLI (out/main/cli.js)
    globalSetup: ['test/support/build-app.ts', 'test/support/clusters-root.ts'],
    // two files at a time, like the unit tests: each fault test has its own Postgres and server
    maxWorkers: 2,
    reporters: [
      'default',
      ['json', { outputFile: 'test-results/vitest-faults.json' }],
      ['./test/support/counting-reporter.ts', { outputFile: 'test-results/vitest-faults-counts.json' }]
    ]
  }
})
