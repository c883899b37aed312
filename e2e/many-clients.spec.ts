import type { Page } from '@playwright/test'
import { expect, test } from './fixtures'

/**
 * Issue 16's "done means": the Shape workbench with 8 live clients (4 over SSE in one tab, 4 long-polling in another,
 * one browser and so one connection pool), and the other pages still answer while the clients keep receiving changes.
 * Chromium caps HTTP/1.1 connections per host; a page call queued behind held live requests would wait for one to end
 * (30 s for a long-poll here, for ever for SSE).
 */
const ANSWERS_WITHIN = 10_000

// Live requests held longer than a page may take to answer: a call queued behind them would wait for one to end.
test.use({ appArgs: ['--long-poll-timeout', '30000'] })

async function startClients(page: Page, live: 'sse' | 'long-poll') {
  await page.getByLabel('clients', { exact: true }).fill('4')
  await page.getByLabel('table', { exact: true }).selectOption('projects')
  await page.getByLabel('where', { exact: true }).fill('id <= 1000000003')
  await page.getByLabel('live mode').selectOption(live)
  await page.getByRole('button', { name: 'Start', exact: true }).click()
  await expect(page.getByTestId('row-count')).toHaveText('3 rows')
  await expect(page.getByTestId('phase')).toHaveText('live')
}

/** Each client's requests in the Requests view (labels `client·#request`), with their status (`…` while waiting). */
async function requestsByClient(page: Page): Promise<Map<number, Array<{ id: number; status: string }>>> {
  const rows = page.getByTestId('requests').locator('tbody tr')
  const labels = await rows.locator('td:nth-child(1)').allTextContents()
  const statuses = await rows.locator('td:nth-child(2)').allTextContents()
  const byClient = new Map<number, Array<{ id: number; status: string }>>()
  for (const [index, label] of labels.entries()) {
    const status = statuses[index] ?? ''
    const match = /^(\d+)·#(\d+)$/.exec(label)
    if (!match) continue
    const client = Number(match[1])
    byClient.set(client, [...(byClient.get(client) ?? []), { id: Number(match[2]), status }])
  }
  return byClient
}

test('with 8 live workbench clients (SSE and long-poll) the MCP, Proxy and Database pages answer, and the clients keep receiving changes', async ({
  page,
  app,
  openApp
}) => {
  test.setTimeout(120_000)
  let tick = 0
  const write = () => app.call('db.query', { sql: `UPDATE projects SET name = 'tick ${++tick}' WHERE id = 1000000001` })

  // the tab that visits the other pages is loaded first: what is measured is each page's calls, not loading the bundle
  const pages = await page.context().newPage()
  await openApp(pages, 'sql')
  await expect(pages.getByLabel('SQL', { exact: true })).toBeVisible()
  await openApp(page, 'shapes')
  await startClients(page, 'sse')
  const longPolls = await page.context().newPage()
  await longPolls.goto(`${app.baseUrl}/#/shapes`)
  await startClients(longPolls, 'long-poll')

  const visits: Array<{ id: string; call: string; shown: (view: Page) => Promise<void> }> = [
    {
      id: 'mcp',
      call: 'mcp.list',
      shown: (view) => expect(view.getByRole('region', { name: 'Servers' })).toContainText('No servers yet')
    },
    { id: 'proxy', call: 'proxy.status', shown: (view) => expect(view.getByTestId('proxy-not-running')).toBeVisible() },
    { id: 'database', call: 'db.tables', shown: (view) => expect(view.getByTestId('rows-projects')).toBeVisible() }
  ]
  for (const visit of visits) {
    const answered = pages.waitForResponse(
      (response) => response.url().endsWith(`/rpc/${visit.call}`) && response.ok(),
      { timeout: ANSWERS_WITHIN }
    )
    await pages.getByRole('navigation', { name: 'Main' }).locator(`a[href="#/${visit.id}"]`).click()
    await answered
    await visit.shown(pages)
    // both tabs' clients follow a change written now
    await write()
    for (const workbench of [page, longPolls]) {
      await expect(workbench.getByRole('table', { name: 'Shape rows' })).toContainText(`tick ${tick}`, {
        timeout: ANSWERS_WITHIN
      })
    }
  }

  // every long-polling client (not only the one whose rows are shown) gets the next change
  await longPolls.getByRole('tab', { name: 'Requests & cache' }).click()
  // the table's rows come from the workbench's worker with its next update
  await expect.poll(async () => [...(await requestsByClient(longPolls)).keys()].sort()).toEqual([1, 2, 3, 4])
  const before = await requestsByClient(longPolls)
  expect([...before.keys()].sort()).toEqual([1, 2, 3, 4])
  for (const client of before.keys()) expect(before.get(client)?.some((request) => request.status === '…')).toBe(true)
  await write()
  await expect
    .poll(
      async () => {
        const after = await requestsByClient(longPolls)
        return [1, 2, 3, 4].filter((client) => {
          // the long-poll waiting when the change was written, or a later one, answers it
          const waiting = Math.max(
            ...(before.get(client) ?? []).filter((request) => request.status === '…').map((request) => request.id)
          )
          return (after.get(client) ?? []).some((request) => request.id >= waiting && request.status === '200')
        })
      },
      { timeout: 15_000 }
    )
    .toEqual([1, 2, 3, 4])
})
