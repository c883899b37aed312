import { test, expect, type RunningHeadlessApp } from './fixtures'

const SHAPES = 7
const MIB = 1024 * 1024
const SLOT = 'e2e_server_page_lagging'
/** WAL the test makes behind the second slot: past half of the 64 MiB max_slot_wal_keep_size it sets later. */
const LAG = 34 * MIB

interface QueryResult {
  ok: boolean
  results: Array<{ rows: Array<Array<string | null>> }>
  error?: { message: string }
}

/** One value from the app's SQL console (the `db.query` call), as text. */
async function sqlValue(app: RunningHeadlessApp, sql: string): Promise<string> {
  const result = await app.call<QueryResult>('db.query', { sql })
  if (!result.ok) throw new Error(`${sql}: ${result.error?.message}`)
  return result.results.at(-1)?.rows[0]?.[0] ?? ''
}

const shapeUrl = (app: RunningHeadlessApp, params: Record<string, string>) =>
  `${app.baseUrl}/v1/shape?${new URLSearchParams(params).toString()}`

/** Follows a shape to its end (as a client would); its handle and offset. */
async function syncShape(app: RunningHeadlessApp, where: string): Promise<{ handle: string; offset: string }> {
  let response = await fetch(shapeUrl(app, { table: 'issues', where, offset: '-1' }))
  const handle = response.headers.get('service-handle') ?? ''
  for (;;) {
    expect(response.status).toBe(200)
    const offset = response.headers.get('service-offset') ?? ''
    if (response.headers.has('service-up-to-date')) return { handle, offset }
    response = await fetch(shapeUrl(app, { table: 'issues', where, offset, handle }))
  }
}

test.afterAll(async ({ app }) => {
  await sqlValue(
    app,
    `SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots WHERE slot_name = '${SLOT}'`
  )
  await sqlValue(app, 'ALTER SYSTEM RESET max_slot_wal_keep_size')
  await sqlValue(app, 'SELECT pg_reload_conf()')
})

test('Server page: the shapes, long-polls and a lagging slot the test made, a warning, and shapes dropped from the page', async ({
  page,
  openApp,
  app
}) => {
  // the worker's app may hold shapes of other specs: start from none
  await app.call('server.dropAllShapes', {})
  const made: Array<{ where: string; handle: string; offset: string }> = []
  for (let index = 0; index < SHAPES; index++) {
    const where = `priority = ${200 + index}`
    made.push({ where, ...(await syncShape(app, where)) })
  }
  // two live long-polls held on the first shape
  const controller = new AbortController()
  const first = made[0]!
  const polls = [1, 2].map(() =>
    fetch(
      shapeUrl(app, { table: 'issues', where: first.where, handle: first.handle, offset: first.offset, live: 'true' }),
      {
        signal: controller.signal
      }
    ).catch(() => null)
  )

  // a second slot nobody consumes, behind by at least 34 MiB of WAL the test makes
  const createdAt = await sqlValue(
    app,
    `SELECT lsn::text FROM pg_create_logical_replication_slot('${SLOT}', 'pgoutput')`
  )
  while (Number(await sqlValue(app, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '${createdAt}')::bigint`)) < LAG)
    await sqlValue(app, "SELECT pg_logical_emit_message(false, 'e2e', repeat(md5(random()::text), 32768))")
  // the server's own slot keeps WAL back to a running-transactions record (one every 15 s): one is asked for, so that
  // the smaller max_slot_wal_keep_size below never reaches it
  await expect
    .poll(async () => {
      await sqlValue(app, 'SELECT pg_log_standby_snapshot()')
      return Number(
        await sqlValue(
          app,
          "SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn))::bigint FROM pg_replication_slots WHERE slot_name LIKE 'syncscope_%'"
        )
      )
    })
    .toBeLessThan(MIB)
  const lagOf = async () =>
    Number(
      await sqlValue(
        app,
        `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = '${SLOT}'`
      )
    )
  const before = await lagOf()
  expect(before).toBeGreaterThanOrEqual(LAG)

  await openApp(page, 'server')
  await expect(page.getByTestId('server-shape-count')).toHaveText(String(SHAPES))
  await expect(page.getByTestId('server-matched')).toHaveText(`${SHAPES} shapes`)
  await expect(page.getByTestId('server-long-polls')).toHaveText('2')
  const firstRow = page.getByTestId(`server-shape-${first.handle}`)
  await expect(firstRow.locator('[data-column="Long-polls"]')).toHaveText('2')
  await expect(firstRow.locator('[data-column="Table"]')).toHaveText('public.issues')
  await expect(firstRow.locator('[data-column="Where"]')).toHaveText(first.where)
  await expect(firstRow.locator('[data-column="Phase"]')).toHaveText('ready')
  for (const shape of made) await expect(page.getByTestId(`server-shape-${shape.handle}`)).toBeVisible()

  // the lagging slot's figures: what Postgres reported just before and just after the page read them
  const lagCell = page.getByTestId(`slot-${SLOT}`).getByTestId('slot-lag')
  await expect(lagCell).toHaveAttribute('data-bytes', /^\d+$/)
  const shown = Number(await lagCell.getAttribute('data-bytes'))
  const after = await lagOf()
  expect(shown).toBeGreaterThanOrEqual(before)
  expect(shown).toBeLessThanOrEqual(after)
  await expect(page.getByTestId(`slot-${SLOT}`).getByTestId('slot-consumer')).toHaveText('none')
  await expect(page.locator('[data-testid="slot-warning"]', { hasText: SLOT })).toHaveCount(0)
  await page.screenshot({ path: test.info().outputPath('server-page.png'), fullPage: true })

  // max_slot_wal_keep_size at 64 MiB: the slot holds half of it or more, and the page warns before it hurts
  await sqlValue(app, "ALTER SYSTEM SET max_slot_wal_keep_size = '64MB'")
  await sqlValue(app, 'SELECT pg_reload_conf()')
  const warning = page.locator(`[data-testid="slot-warning"][data-slot="${SLOT}"]`)
  await expect(warning).toHaveAttribute('data-level', 'warning')
  await expect(warning).toContainText('of max_slot_wal_keep_size 64 MiB')

  // a filter narrows the table to the shapes it names
  await page.getByTestId('server-filter').fill(made[3]!.where)
  await expect(page.getByTestId('server-matched')).toHaveText(`1 of ${SHAPES} shapes`)
  await page.getByTestId('server-filter').fill('')
  await expect(page.getByTestId('server-matched')).toHaveText(`${SHAPES} shapes`)

  // drop one shape from its row: it leaves the page, and its held long-polls are told to refetch (409), from a fresh
  // shape of the same definition that their answer made
  await firstRow.getByTestId('server-drop-shape').click()
  await expect(firstRow).toHaveCount(0)
  const answered = await Promise.all(polls)
  expect(answered.map((response) => response?.status)).toEqual([409, 409])
  const fresh = answered[0]?.headers.get('service-handle') ?? ''
  expect(fresh).not.toBe(first.handle)
  await expect(page.getByTestId('server-long-polls')).toHaveText('0')
  await expect(page.getByTestId(`server-shape-${fresh}`).locator('[data-column="Where"]')).toHaveText(first.where)
  await expect(page.getByTestId('server-shape-count')).toHaveText(String(SHAPES))
  const state = await app.call<{ shapes: Array<{ handle: string }> }>('server.state', { limit: 100 })
  expect(state.shapes.map((shape) => shape.handle)).not.toContain(first.handle)

  // drop all, after a confirmation
  await page.getByTestId('server-drop-all').click()
  await page.getByTestId('server-drop-all-confirm').click()
  await expect(page.getByTestId('server-dropped-all')).toHaveText(`${SHAPES} dropped`)
  await expect(page.getByTestId('server-shape-count')).toHaveText('0')
  await expect(page.getByTestId('server-matched')).toHaveText('0 shapes')
  controller.abort()
})

test('Server page with more shapes than one window: rows rendered only around the view, the last one reached by scrolling, sorted by handle', async ({
  page,
  openApp,
  app
}) => {
  test.setTimeout(120_000)
  await app.call('server.dropAllShapes', {})
  const MANY = 340
  const handles: string[] = []
  for (let from = 0; from < MANY; from += 10)
    handles.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(10, MANY - from) }, async (_, index) => {
          const response = await fetch(
            shapeUrl(app, { table: 'issues', where: `id = ${900_000 + from + index}`, offset: '-1' })
          )
          expect(response.status).toBe(200)
          await response.arrayBuffer()
          return response.headers.get('service-handle') ?? ''
        })
      ))
    )
  await openApp(page, 'server')
  await expect(page.getByTestId('server-shape-count')).toHaveText(String(MANY))
  const grid = page.getByTestId('server-shapes')
  // virtualised: a few dozen rows in the page, not 340
  expect(await grid.locator('[role="row"][data-testid^="server-shape-"]').count()).toBeLessThan(60)
  // the last-used order: the last row is the shape made last; past the first window, it is fetched when scrolled to
  const lastMade = await app.call<{ shapes: Array<{ handle: string; eviction_rank: number }> }>('server.state', {
    offset: MANY - 1,
    limit: 1
  })
  const last = lastMade.shapes[0]!
  expect(last.eviction_rank).toBe(MANY)
  await grid.evaluate((element) => (element.scrollTop = element.scrollHeight))
  const lastRow = page.getByTestId(`server-shape-${last.handle}`)
  await expect(lastRow.locator('[data-column="Rank"]')).toHaveText(String(MANY))
  // sorted by handle (descending after a second click): the first row is the greatest handle
  await grid.evaluate((element) => (element.scrollTop = 0))
  await page.getByTestId('server-sort-handle').click()
  await page.getByTestId('server-sort-handle').click()
  const greatest = [...handles].sort().at(-1)!
  await expect(grid.locator('[role="row"][data-testid^="server-shape-"]').first()).toHaveAttribute(
    'data-testid',
    `server-shape-${greatest}`
  )
  await app.call('server.dropAllShapes', {})
})
