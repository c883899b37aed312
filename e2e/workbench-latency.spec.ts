import type { Page } from '@playwright/test'
import { expect, test } from './fixtures'
import { forwardingServer } from './forwarding-server'

test.use({ appArgs: ['--long-poll-timeout', '2000', '--sse-keep-alive', '500'] })

const shot = (page: Page, name: string) =>
  page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true })

/** The p50/p95/p99/max of a leg of the latency table, in milliseconds. */
async function leg(page: Page, name: 'append' | 'client' | 'appendToClient'): Promise<number[]> {
  const cells = page.getByTestId('latency-stats').locator(`tr[data-leg="${name}"] td`)
  return (await cells.allTextContents()).map((text) => Number(text.replace(' ms', '')))
}

for (const live of ['long-poll', 'sse'] as const) {
  test(`over ${live}, the Latency tab times each commit made while live: percentiles and a chart of exactly those commits, with the change rate`, async ({
    page,
    app,
    openApp
  }) => {
    const table = `latency_${live.replace('-', '_')}`
    await app.call('db.query', { sql: `CREATE TABLE ${table} (id int PRIMARY KEY, note text)` })
    await openApp(page, 'shapes')
    await page.getByLabel('table', { exact: true }).selectOption(table)
    await page.getByLabel('live mode').selectOption(live)
    await page.getByRole('button', { name: 'Start', exact: true }).click()
    await expect(page.getByTestId('phase')).toHaveText('live')
    await page.getByRole('tab', { name: 'Latency' }).click()
    await expect(page.getByTestId('latency-status')).toContainText(
      'waiting for a change committed while the shape is live'
    )

    // 12 transactions of 2 rows each
    const COMMITS = 12
    for (let n = 1; n <= COMMITS; n += 1)
      await app.call('db.query', { sql: `INSERT INTO ${table} VALUES (${2 * n}, 'a'), (${2 * n + 1}, 'b')` })

    await expect(page.getByTestId('latency-transactions')).toHaveText(String(COMMITS))
    await expect(page.getByTestId('latency-messages')).toHaveText(String(2 * COMMITS))
    // the chart draws one point per commit for each of its two series; the rate chart counts every change once
    await expect(page.getByTestId('latency-chart')).toHaveAttribute('data-points', String(COMMITS))
    await expect(page.getByTestId('rate-chart')).toHaveAttribute('data-sums', String(2 * COMMITS))
    await expect(page.getByTestId('latency-chart').locator('canvas')).toHaveCount(1)
    for (const name of ['append', 'client', 'appendToClient'] as const) {
      const [p50, p95, p99, max] = await leg(page, name)
      expect([p50, p95, p99, max].every((value) => Number.isFinite(value))).toBe(true)
      expect(p50).toBeLessThanOrEqual(p95 as number)
      expect(p95).toBeLessThanOrEqual(p99 as number)
      expect(p99).toBeLessThanOrEqual(max as number)
      // a local server on a loaded machine: seconds would mean something is wrong
      expect(max).toBeLessThan(5_000)
    }
    const [appendP50] = await leg(page, 'append')
    const [clientP50] = await leg(page, 'client')
    expect(clientP50).toBeGreaterThanOrEqual((appendP50 as number) - 1)
    await shot(page, `latency-${live}`)
  })
}

test('for another shape service that does not tell commit times, the Latency tab says so', async ({
  page,
  app,
  openApp
}) => {
  // it passes /other/v1/shape to the app's shape API and knows nothing else (as Electric)
  const other = await forwardingServer(app.baseUrl, { prefix: '/other', only: '/v1/shape' })
  try {
    await openApp(page, 'shapes')
    await page.getByLabel('target', { exact: true }).selectOption('custom')
    await page.getByLabel('shape URL', { exact: true }).fill(`${other.url}/v1/shape`)
    await page.getByLabel('table', { exact: true }).selectOption('projects')
    await page.getByRole('button', { name: 'Start', exact: true }).click()
    await expect(page.getByTestId('phase')).toHaveText('live')
    await page.getByRole('tab', { name: 'Latency' }).click()
    await app.call('db.query', { sql: `UPDATE projects SET name = 'timed elsewhere' WHERE id = 1000000001` })
    await expect(page.getByTestId('latency-status')).toContainText(
      'the server does not tell commit times (not a Syncscope server)'
    )
    await expect(page.getByTestId('latency-messages')).toHaveText('1')
  } finally {
    other.close()
  }
})
