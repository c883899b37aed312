import { expect, test } from './fixtures'

// Short live timeouts so the long-poll and keep-alive checks finish within the test.
test.use({
  appArgs: ['--long-poll-timeout', '2000', '--sse-keep-alive', '500'],
  viewport: { width: 1400, height: 2000 }
})

test('the Conformance page checks this app and shows the report', async ({ page, openApp }) => {
  test.setTimeout(120_000)
  await openApp(page, 'conformance')
  await expect(page.getByRole('heading', { name: 'Conformance' })).toBeVisible()
  await expect(page.getByLabel('Endpoint')).toContainText(/this app: http:\/\/127\.0\.0\.1:\d+\/v1\/shape/)
  await expect(page.getByLabel('Table')).toHaveValue('issues')
  await page.getByLabel('Max wait').fill('10')
  await page.getByRole('button', { name: 'Run the check' }).click()
  const summary = page.getByTestId('conformance-summary')
  await expect(summary).toContainText(
    /13 checks: 12 passed, 0 failed, 0 with warnings, 1 skipped in \d+\.\d s · live changes in syncscope_check_[0-9a-f]{8} \(dropped\)/,
    { timeout: 90_000 }
  )
  for (const id of ['initial-sync', 'long-poll', 'sse', 'must-refetch', 'cors', 'cache-key']) {
    await expect(page.getByTestId(`check-${id}`).getByTestId('status')).toHaveText('pass')
  }
  await expect(page.getByTestId('check-sse-lifetime')).toContainText(
    'needs up to 61 s (max-age 59 s); --max-wait is 10 s'
  )
  await page.screenshot({ path: test.info().outputPath('conformance-report.png'), fullPage: true })

  // The other brand than the app speaks: the finding, its rule, its fix and the exchange that shows it.
  await page.getByLabel('Header brand').selectOption('electric')
  await page.getByRole('button', { name: 'Run the check' }).click()
  const finding = page.getByTestId('check-initial-sync').getByTestId('finding-headers.brand-mismatch')
  await expect(finding).toBeVisible({ timeout: 90_000 })
  await expect(page.getByTestId('check-initial-sync').getByTestId('status')).toHaveText('fail')
  await expect(finding).toContainText('run with --header-brand service')
  await expect(finding).toContainText('docs/protocol.md#header-brand')
  await expect(finding).toContainText('< service-offset: 0_0')
  await page.screenshot({ path: test.info().outputPath('conformance-brand-mismatch.png'), fullPage: true })
})
