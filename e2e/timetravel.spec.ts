import { readFile } from 'node:fs/promises'
import type { Page } from '@playwright/test'
import { expect, test, type RunningHeadlessApp } from './fixtures'

test.use({ appArgs: ['--long-poll-timeout', '2000'] })

const shot = (page: Page, name: string) =>
  page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true })

const key = (table: string, id: number) => `"public"."${table}"/"${id}"`

interface QueryResult {
  ok: boolean
  results: Array<{ rows: Array<Array<string | null>> }>
}

/** Runs SQL on the app's database; the first value of the last statement's first row. */
async function sql(app: RunningHeadlessApp, text: string): Promise<string | null> {
  const result = await app.call<QueryResult>('db.query', { sql: text })
  if (!result.ok) throw new Error(`${text}: ${JSON.stringify(result)}`)
  return result.results.at(-1)?.rows[0]?.[0] ?? null
}

async function startShape(page: Page, table: string) {
  await page.getByLabel('table', { exact: true }).selectOption(table)
  await page.getByLabel('live mode').selectOption('long-poll')
  await page.getByRole('button', { name: 'Start', exact: true }).click()
}

const timeTravel = (page: Page) => page.getByRole('tab', { name: 'Time travel' }).click()
const rowsAt = (page: Page) => page.getByRole('table', { name: 'Rows at this point' })

test("time travel through the local server's log: the scrubber, each row's messages, Verify, the txid panel, a bundle exported and opened read-only", async ({
  page,
  app,
  openApp
}) => {
  await sql(app, 'CREATE TABLE tt_items (id int PRIMARY KEY, title text NOT NULL)')
  await sql(app, `INSERT INTO tt_items VALUES (1, 'one'), (2, 'two'), (3, 'three')`)
  await openApp(page, 'shapes')
  await startShape(page, 'tt_items')
  await expect(page.getByTestId('row-count')).toHaveText('3 rows')
  const txid = await sql(
    app,
    `WITH changed AS (UPDATE tt_items SET title = 'two, edited' WHERE id = 2 RETURNING 1) SELECT pg_current_xact_id()::text FROM changed`
  )
  await sql(app, 'DELETE FROM tt_items WHERE id = 3')
  await expect(page.getByTestId('row-count')).toHaveText('2 rows')

  await timeTravel(page)
  await page.getByRole('button', { name: "Read the server's log" }).click()
  await expect(page.getByTestId('log-source')).toContainText("the local server's files")
  await expect(page.getByTestId('log-source')).toContainText('6 messages')
  // at the end of the log: row 2 edited, row 3 gone
  await expect(page.getByTestId('rows-at-count')).toContainText('2 rows at offset')
  await expect(rowsAt(page)).toContainText('two, edited')
  await expect(page.getByTestId('scrub-point')).toContainText(`after message 6 of 6 · delete ${key('tt_items', 3)}`)

  // back through the log: after the snapshot (3 inserts, snapshot-end) the rows are as first read
  const slider = page.getByLabel('log position')
  await slider.fill('4')
  await expect(page.getByTestId('scrub-point')).toContainText('after message 4 of 6 · snapshot-end')
  await expect(page.getByTestId('rows-at-count')).toContainText('3 rows at offset')
  await expect(rowsAt(page)).toContainText('three')
  await expect(rowsAt(page)).not.toContainText('two, edited')
  await page.getByRole('button', { name: 'next message' }).click()
  await expect(page.getByTestId('scrub-point')).toContainText(`update ${key('tt_items', 2)}`)
  await expect(page.getByTestId('scrub-point')).toContainText(`txid ${txid}`)
  // the row the point's message made is marked; a click shows its messages
  const edited = rowsAt(page).locator(`[data-key='${key('tt_items', 2)}']`)
  await expect(edited).toHaveAttribute('data-here', 'true')
  await edited.click()
  const messages = page.getByTestId('row-messages')
  await expect(messages.getByTestId('row-origin')).toHaveCount(2)
  await expect(messages.getByTestId('row-origin').nth(0)).toContainText('#2 insert at')
  await expect(messages.getByTestId('row-origin').nth(1)).toContainText(`#5 update at`)
  await expect(messages.getByTestId('row-origin').nth(1)).toContainText(`(title) txid ${txid}`)
  await messages.getByRole('button', { name: /#5 update/ }).click()
  await expect(messages.getByTestId('message-body')).toContainText('"title": "two, edited"')
  await messages.getByRole('button', { name: 'go there' }).first().click()
  await expect(page.getByTestId('scrub-point')).toContainText('after message 2 of 6')
  await expect(page.getByTestId('rows-at-count')).toContainText('2 rows at offset')
  await slider.fill('0')
  await expect(page.getByTestId('scrub-point')).toContainText('before the first message (offset -1)')
  await expect(page.getByTestId('rows-at-count')).toContainText('0 rows at offset -1')
  // an offset outside the log is one line
  await page.getByLabel('go to offset').fill('99999999999_0')
  await page.getByRole('button', { name: 'Go', exact: true }).click()
  await expect(page.getByRole('alert').filter({ hasText: 'outside the log' })).toHaveText(
    /^timetravel_input: offset 99999999999_0 is outside the log: it ends at \d+_\d+$/
  )
  await shot(page, 'time-travel')

  // Verify: this session's rows hold what Postgres holds
  await page.getByRole('button', { name: 'Verify', exact: true }).click()
  await expect(page.getByTestId('verify-verdict')).toHaveText('The client holds what Postgres holds')
  await expect(page.getByTestId('verified-shape')).toHaveAttribute('data-verdict', 'equal')

  // the txid panel: the message carrying the id, and an id never given
  await page.getByLabel('txid', { exact: true }).fill(txid as string)
  await page.getByRole('button', { name: 'Trace' }).click()
  await expect(page.getByTestId('txid-verdict')).toHaveText(`Transaction ${txid} reached the shape`)
  await expect(page.getByTestId('txid-carrier')).toContainText(`message #5: update ${key('tt_items', 2)} at`)
  await page.getByLabel('txid', { exact: true }).fill('abc')
  await page.getByRole('button', { name: 'Trace' }).click()
  await expect(page.getByRole('alert').filter({ hasText: 'transaction id' })).toContainText(
    'a transaction id is a whole number'
  )
  await shot(page, 'verify-and-txid')

  // a bundle exported, then opened read-only: its log, its recording verified against its own rows
  const download = page.waitForEvent('download')
  await page.getByRole('button', { name: 'Export bundle' }).click()
  const saved = await (await download).path()
  const bundle = await readFile(saved, 'utf8')
  expect(JSON.parse(bundle)).toMatchObject({ format: 'syncscope-bundle', postgres: { rows: expect.any(Array) } })
  await page.getByLabel('Syncscope bundle to open').setInputFiles({
    name: 'tt_items.syncscope-bundle.json',
    mimeType: 'application/json',
    buffer: Buffer.from(bundle)
  })
  await expect(page.getByTestId('log-source')).toContainText('a bundle, read-only')
  await expect(page.getByTestId('log-source')).toContainText('6 messages')
  await expect(page.getByRole('button', { name: 'Export bundle' })).toHaveCount(0)
  await expect(rowsAt(page)).toContainText('two, edited')
  await page.getByRole('button', { name: 'Verify the bundle' }).click()
  await expect(page.getByTestId('verify-verdict')).toHaveText('The client holds what Postgres holds')
  await expect(page.getByTestId('verify-report')).toContainText("against the bundle's rows")
  // a file cut short is one line
  await page.getByLabel('Syncscope bundle to open').setInputFiles({
    name: 'cut.syncscope-bundle.json',
    mimeType: 'application/json',
    buffer: Buffer.from(bundle.slice(0, 300))
  })
  await expect(page.getByRole('alert').filter({ hasText: 'cut.syncscope-bundle.json' })).toHaveText(
    /^timetravel_input: cut\.syncscope-bundle\.json is not JSON \(.*\): cut short, or not a bundle$/
  )
  await shot(page, 'bundle')
})
