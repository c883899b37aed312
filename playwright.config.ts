import { defineConfig } from '@playwright/test'
import { chromiumArgs, chromiumPath } from './e2e/chromium'

export default defineConfig({
  testDir: './e2e',
  // the app under test is the built one (bin/syncscope.js runs out/main/cli.js, serving out/renderer)
  globalSetup: ['./test/support/build-app.ts', './test/support/clusters-root.ts'],
  outputDir: 'test-results/e2e',
  timeout: 60_000,
  // the whole run (scripts/test.mjs kills it a minute later): a hung run fails instead of holding CI
  globalTimeout: 9 * 60_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 2,
  retries: 0,
  reporter: [['list'], ['json', { outputFile: 'test-results/playwright.json' }]],
  use: {
    browserName: 'chromium',
    headless: true,
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: chromiumPath,
      args: chromiumArgs
    }
  }
})
