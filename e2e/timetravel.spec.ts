import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page, Request } from '@playwright/test'
import { SOUND, startNginx } from '../test/support/nginx'
import { faults, key, recordFaultySession } from '../test/timetravel/faults'
import { needFacilities } from './facilities'
import { expect, test, type RunningHeadlessApp } from './fixtures'

test.use({ appArgs: ['--long-poll-timeout', '2000'] })

const shot = (page: Page, name: string) =>
  page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true })

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

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
  // pinned after the snapshot, the changes to the end of the log: row 2 edited, row 3 deleted, each with its message
  await slider.fill('4')
  await page.getByRole('button', { name: 'Pin this point' }).click()
  await slider.fill('6')
  const changes = page.getByTestId('changes-since')
  await expect(changes).toContainText('(messages 5…6): 2 rows changed')
  await expect(changes.locator("[data-kind='changed']")).toContainText('title: two → two, edited')
  await expect(changes.locator("[data-kind='changed']")).toContainText(`(title) txid ${txid}`)
  await expect(changes.locator("[data-kind='removed']")).toContainText(key('tt_items', 3))
  await expect(changes.locator("[data-kind='removed']")).toContainText('delete at')
  await page.getByRole('button', { name: 'Unpin' }).click()
  await expect(changes).toHaveCount(0)
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

test('a big log stays windowed: dragging the scrubber asks main one point at a time, the table draws only what is in view', async ({
  page,
  app,
  openApp
}) => {
  await sql(app, 'CREATE TABLE tt_big (id int PRIMARY KEY, n int NOT NULL)')
  await sql(app, 'INSERT INTO tt_big SELECT id, 0 FROM generate_series(1, 5000) AS id')
  await openApp(page, 'shapes')
  await startShape(page, 'tt_big')
  await expect(page.getByTestId('row-count')).toHaveText('5000 rows')
  for (let round = 1; round <= 4; round++) await sql(app, `UPDATE tt_big SET n = ${round}`)
  await timeTravel(page)
  // the updates reach the log as they replicate: read it again until all are in
  await expect(async () => {
    await page.getByRole('button', { name: "Read the server's log" }).click()
    await expect(page.getByText('Reading the log…')).toHaveCount(0, { timeout: 30_000 })
    await expect(page.getByTestId('log-source')).toContainText('25001 messages', { timeout: 1_000 })
  }).toPass({ timeout: 60_000 })
  await expect(page.getByTestId('rows-at-count')).toContainText('5000 rows at offset')
  const drawn = rowsAt(page).locator('[role=row][data-key]')
  expect(await drawn.count()).toBeLessThan(80)

  // at most one rowsAt in flight while the slider is dragged from end to start (one asked before now is not counted)
  const inFlight = new Set<Request>()
  let most = 0
  let asked = 0
  page.on('request', (request) => {
    if (!request.url().endsWith('/rpc/timetravel.rowsAt')) return
    asked += 1
    inFlight.add(request)
    most = Math.max(most, inFlight.size)
  })
  const settled = (request: Request) => inFlight.delete(request)
  page.on('requestfinished', settled)
  page.on('requestfailed', settled)
  // dragged with the mouse: each move placed on the slider where it is then (the page may move under it)
  const slider = page.getByLabel('log position')
  const width = ((await slider.boundingBox()) as { width: number }).width
  await slider.hover({ position: { x: width - 4, y: 5 } })
  await page.mouse.down()
  for (let step = 1; step <= 40; step++)
    await slider.hover({ position: { x: Math.max(1, (width - 4) * (1 - step / 40)), y: 5 } })
  await page.mouse.up()
  await expect(page.getByTestId('scrub-point')).toContainText('before the first message (offset -1)')
  await expect(page.getByTestId('rows-at-count')).toHaveText('0 rows at offset -1')
  expect(asked).toBeGreaterThan(0)
  expect(most).toBe(1)

  // after the snapshot and the first round of updates: row 5000 (scrolled to) holds n = 1, made by 2 messages
  await page.getByLabel('log position').fill(String(5001 + 5000))
  await expect(page.getByTestId('rows-at-count')).toContainText('5000 rows at offset')
  await rowsAt(page).evaluate((element) => (element.scrollTop = element.scrollHeight))
  const last = rowsAt(page).locator(`[data-key='${key('tt_big', 5000)}']`)
  await expect(last).toContainText('2 messages: update at')
  await expect(last.locator('[role=cell]').last()).toHaveText('1')
  expect(await drawn.count()).toBeLessThan(80)
  await shot(page, 'big-log')
})

test("behind nginx: Verify names the message dropped, the one duplicated and the two reordered in a tap's HAR; the txid panel names an id taken outside its transaction", async ({
  page,
  app,
  openApp
}) => {
  needFacilities(['nginx'])
  const nginx = await startNginx(app.baseUrl, SOUND)
  const dir = await mkdtemp(join(tmpdir(), 'syncscope-e2e-faults-'))
  try {
    const { name, har } = await recordFaultySession({
      upstream: nginx.url,
      dir,
      name: 'tt_faults',
      query: (text) => sql(app, text)
    })
    const { dropped, duplicated, reordered } = faults(har, name)
    await openApp(page, 'shapes')
    await page.getByLabel('target', { exact: true }).selectOption('custom')
    await page.getByLabel('shape URL', { exact: true }).fill(`${nginx.url}/v1/shape`)
    await startShape(page, name)
    await expect(page.getByTestId('row-count')).toHaveText('4 rows')
    const outside = (await sql(app, 'SELECT pg_current_xact_id()::text')) as string
    await sql(app, `UPDATE ${name} SET title = 'after the id' WHERE id = 1`)
    await expect(page.getByRole('table', { name: 'Shape rows' })).toContainText('after the id')

    await timeTravel(page)
    await page.getByRole('button', { name: 'Read what this session received' }).click()
    await expect(page.getByTestId('log-source')).toContainText('what this session received')
    await expect(rowsAt(page)).toContainText('after the id')

    const verifyFile = async (file: string, text: string) => {
      await page.getByLabel('HAR or recording to verify').setInputFiles({
        name: file,
        mimeType: 'application/json',
        buffer: Buffer.from(text)
      })
      await expect(page.getByTestId('verify-verdict')).toHaveText('The client diverged from Postgres')
      return page.getByTestId('verify-report')
    }
    let report = await verifyFile('dropped.har', dropped)
    await expect(report.getByTestId('anomaly')).toHaveCount(1)
    await expect(report.getByTestId('anomaly')).toHaveAttribute('data-kind', 'dropped')
    await expect(report.getByTestId('anomaly')).toContainText(
      new RegExp(`the update of ${escape(key(name, 2))} at \\d+_0 \\(txid \\d+\\) is in the log but never arrived`)
    )
    const row2 = report.getByTestId('diverging-row').filter({ hasText: key(name, 2) })
    await expect(row2.getByTestId('cause')).toContainText('dropped: the update of')
    await expect(row2).toContainText('title=two, late')

    report = await verifyFile('duplicated.har', duplicated)
    await expect(report.getByTestId('anomaly')).toHaveAttribute('data-kind', 'duplicated')
    await expect(report.getByTestId('anomaly')).toContainText(
      new RegExp(`the insert of ${escape(key(name, 5))} at \\d+_0 \\(txid \\d+\\) arrived twice`)
    )

    report = await verifyFile('reordered.har', reordered)
    await expect(report.getByTestId('anomaly')).toHaveAttribute('data-kind', 'reordered')
    await expect(report.getByTestId('anomaly')).toContainText(
      new RegExp(
        `the update of ${escape(key(name, 3))} .* arrived (after|before) the update of ${escape(key(name, 3))}`
      )
    )
    await expect(
      report
        .getByTestId('diverging-row')
        .filter({ hasText: key(name, 3) })
        .getByTestId('cause')
    ).toContainText('reordered: ')
    await shot(page, 'verify-faults')

    // a HAR of no shape service is one line
    await page.getByLabel('HAR or recording to verify').setInputFiles({
      name: 'other.har',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify({ log: { entries: [] } }))
    })
    await expect(page.getByRole('alert').filter({ hasText: 'other.har' })).toHaveText(
      /^timetravel_input: other\.har holds no shape requests/
    )

    await page.getByLabel('txid', { exact: true }).fill(outside)
    await page.getByRole('button', { name: 'Trace' }).click()
    await expect(page.getByTestId('txid-verdict')).toHaveText(`Transaction ${outside} is in none of these shapes`)
    await expect(page.getByTestId('txid-shape')).toHaveAttribute('data-reason', 'outside-transaction')
    await expect(page.getByTestId('txid-shape')).toContainText(
      `the id was probably taken outside the write's transaction: transaction ${outside} committed without leaving any row in ${name}`
    )
    await shot(page, 'txid-outside')
  } finally {
    await nginx.close()
    await rm(dir, { recursive: true, force: true })
  }
})
