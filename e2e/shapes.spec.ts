import type { Page } from '@playwright/test'
import { expect, test } from './fixtures'

// Short live timeouts so live requests and keep-alive comments show up within the test.
test.use({ appArgs: ['--long-poll-timeout', '2000', '--sse-keep-alive', '500'] })

const shot = (page: Page, name: string) =>
  page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true })

async function compose(page: Page, options: { where: string; params: string[]; live: 'long-poll' | 'sse' }) {
  await page.getByLabel('table', { exact: true }).selectOption('projects')
  await page.getByLabel('where', { exact: true }).fill(options.where)
  for (const [index, value] of options.params.entries()) {
    await page.getByRole('button', { name: 'Add param' }).click()
    await page.getByLabel(`param ${index + 1}`, { exact: true }).fill(value)
  }
  await page.getByLabel('live mode').selectOption(options.live)
  await page.getByRole('button', { name: 'Start', exact: true }).click()
}

async function runSql(page: Page, sql: string) {
  await page.getByLabel('SQL', { exact: true }).fill(sql)
  await page.getByRole('button', { name: /^Run/ }).click()
  await expect(page.getByTestId('sql-results')).toContainText('UPDATE')
}

const tab = (page: Page, name: string) => page.getByRole('tab', { name }).click()

test('composes a shape with where and params, follows a change from the SQL console over long-poll, and explains the cache headers', async ({
  page,
  openApp
}) => {
  await openApp(page, 'shapes')
  await compose(page, { where: 'id <= $1 AND archived = $2', params: ['1000000005', 'false'], live: 'long-poll' })
  await expect(page.getByTestId('row-count')).toHaveText('5 rows')
  await expect(page.getByTestId('phase')).toHaveText('live')
  await expect(page.getByRole('table', { name: 'Shape rows' })).toContainText('Project 3')
  await shot(page, 'rows')

  await runSql(page, 'UPDATE projects SET archived = true WHERE id = 1000000003')
  await expect(page.getByTestId('row-count')).toHaveText('4 rows')
  await expect(page.getByRole('table', { name: 'Shape rows' })).not.toContainText('Project 3')

  await tab(page, 'Log')
  await page.getByRole('button', { name: 'delete', exact: true }).click()
  await expect(page.locator('tr[data-op="delete"]')).toContainText('"public"."projects"/"1000000003"')
  await shot(page, 'log')

  await tab(page, 'Requests & cache')
  const requests = page.getByTestId('requests')
  await requests.locator('tr[data-request="#1"]').click()
  await expect(page.getByTestId('cache-control')).toHaveText(
    'public, max-age=604800, s-maxage=3600, stale-while-revalidate=2629746'
  )
  await expect(page.getByTestId('cache-verdict')).toContainText(
    'Fresh for 7 days in the browser and 1 hour in shared caches.'
  )
  await requests.locator('tr', { hasText: 'long-poll' }).first().click()
  await expect(page.getByTestId('cache-control')).toHaveText('public, max-age=5, stale-while-revalidate=5')
  await expect(page.getByTestId('cache-verdict')).toContainText('Fresh for 5 seconds.')
  await shot(page, 'requests-and-cache')
})

test('in SSE mode shows the raw frames, keep-alives included, and the row leaving the shape', async ({
  page,
  openApp
}) => {
  await openApp(page, 'shapes')
  await compose(page, { where: 'id > $1 AND NOT archived', params: ['1000000035'], live: 'sse' })
  await expect(page.getByTestId('row-count')).toHaveText('4 rows')
  await expect(page.getByTestId('phase')).toHaveText('live')

  await runSql(page, 'UPDATE projects SET archived = true WHERE id = 1000000037')
  await expect(page.getByTestId('row-count')).toHaveText('3 rows')
  await runSql(page, `UPDATE projects SET name = 'Renamed over SSE' WHERE id = 1000000038`)
  await expect(page.getByRole('table', { name: 'Shape rows' })).toContainText('Renamed over SSE')

  await tab(page, 'SSE frames')
  const frames = page.getByTestId('sse-frames')
  // the list is drawn a window at a time: the search narrows it to the frames looked for
  const search = page.getByLabel('search the frames')
  await search.fill('Renamed over SSE')
  await expect(frames.locator('tr[data-kind="data"]', { hasText: 'Renamed over SSE' }).first()).toBeVisible()
  await search.fill('"operation":"delete"')
  await expect(frames.locator('tr[data-kind="data"]', { hasText: '"operation":"delete"' }).first()).toContainText(
    '1000000037'
  )
  await search.fill('keep-alive')
  await expect(frames.locator('tr[data-kind="comment"]').first()).toContainText(': keep-alive')
  await shot(page, 'sse-frames')

  await tab(page, 'Requests & cache')
  await page.getByTestId('requests').locator('tr', { hasText: 'sse' }).first().click()
  await expect(page.getByTestId('cache-control')).toHaveText(/^public, max-age=\d+$/)
})

test('with several clients, the shared-cache simulation collapses their concurrent live requests', async ({
  page,
  openApp
}) => {
  await openApp(page, 'shapes')
  await page.getByLabel('clients', { exact: true }).fill('3')
  await compose(page, { where: 'id <= $1', params: ['1000000002'], live: 'long-poll' })
  await expect(page.getByTestId('phase')).toHaveText('live')
  await tab(page, 'Requests & cache')
  const requests = page.getByTestId('requests')
  await expect(
    requests.locator('tr', { hasText: 'long-poll' }).filter({ hasText: 'collapses with' }).first()
  ).toBeVisible()
  await expect(requests.locator('tr[data-request="3·#1"]')).toBeVisible()
  await shot(page, 'collapsed-live-requests')
})

test('Drop shape sends every client of the shape to refetch, and each recovers with the same rows', async ({
  page,
  openApp
}) => {
  await openApp(page, 'shapes')
  await page.getByLabel('clients', { exact: true }).fill('2')
  await compose(page, { where: 'id <= $1', params: ['1000000005'], live: 'long-poll' })
  await expect(page.getByTestId('row-count')).toHaveText('5 rows')
  await expect(page.getByTestId('phase')).toHaveText('live')
  await page.getByRole('button', { name: 'Drop shape' }).click()
  await tab(page, 'Requests & cache')
  const mustRefetch = (client: string) =>
    page
      .locator(`[data-testid="requests"] tr[data-request^="${client}"]`)
      .filter({ has: page.locator('td.warn', { hasText: /^409$/ }) })
  await expect(mustRefetch('1·').first()).toBeVisible()
  await expect(mustRefetch('2·').first()).toBeVisible()
  await shot(page, 'drop-shape')
  await tab(page, 'Rows')
  await expect(page.getByTestId('phase')).toHaveText('live')
  await expect(page.getByTestId('row-count')).toHaveText('5 rows')
})

test('renders a large shape virtualised and follows the write generator', async ({ page, openApp }) => {
  await openApp(page, 'shapes')
  await page.getByLabel('table', { exact: true }).selectOption('issues')
  await page.getByRole('button', { name: 'Start', exact: true }).click()
  await expect(page.getByTestId('row-count')).toHaveText('3000 rows')
  const rendered = await page.getByRole('table', { name: 'Shape rows' }).getByRole('row').count()
  expect(rendered).toBeLessThan(100)

  const generator = page.getByRole('region', { name: 'Write generator' })
  await generator.getByLabel('generator table').selectOption('issues')
  await generator.getByLabel('writes per second').fill('5')
  await generator.getByRole('button', { name: 'Start writing' }).click()
  await expect(generator.getByTestId('generator-totals')).toContainText(/[1-9]\d* updated/)
  await generator.getByRole('button', { name: 'Stop writing' }).click()
  await expect(page.getByTestId('change-counts')).toContainText(/ [1-9]\d* updates/)
  await tab(page, 'Log')
  await page.getByRole('button', { name: 'update', exact: true }).click()
  await expect(page.locator('tr[data-op="update"]').first()).toBeVisible()
  await shot(page, 'write-generator')
})

test('shows the server error for an invalid where at its position', async ({ page, openApp }) => {
  await openApp(page, 'shapes')
  await compose(page, { where: 'id <= 1 x 1', params: [], live: 'long-poll' })
  const error = page.getByTestId('where-error')
  await expect(error).toContainText('syntax error at or near "x"')
  // Which character is marked depends on the server counting positions as protocol.md says (see where-error.test.ts).
  await expect(error).toContainText(/at position \d+/)
  await expect(page.getByTestId('row-count')).toHaveText('0 rows')
  await shot(page, 'where-error')
})

test('saves a shape, loads it back, and copies it as curl and as client code', async ({ page, openApp }) => {
  await openApp(page, 'shapes')
  await page.getByLabel('table', { exact: true }).selectOption('users')
  await page.getByLabel('where', { exact: true }).fill('karma > $1')
  await page.getByRole('button', { name: 'Add param' }).click()
  await page.getByLabel('param 1', { exact: true }).fill('500')
  await page.getByLabel('shape name').fill('karmic users')
  await page.getByRole('button', { name: 'Save', exact: true }).click()
  const saved = page.getByRole('region', { name: 'Saved shapes' })
  await expect(saved.getByRole('button', { name: 'karmic users', exact: true })).toBeVisible()

  await page.getByLabel('table', { exact: true }).selectOption('issues')
  await saved.getByRole('button', { name: 'karmic users', exact: true }).click()
  await expect(page.getByLabel('where', { exact: true })).toHaveValue('karma > $1')

  await page.getByRole('button', { name: 'Copy as curl' }).click()
  await expect(page.getByTestId('exported')).toContainText("curl -i 'http://")
  await expect(page.getByTestId('exported')).toContainText('params%5B1%5D=500')
  await page.getByRole('button', { name: 'Copy as @electric-sql/client code' }).click()
  await expect(page.getByTestId('exported')).toContainText('new ShapeStream({')
  await shot(page, 'saved-and-exported')
})

async function composeChangesOnly(page: Page) {
  await page.getByLabel('table', { exact: true }).selectOption('issues')
  await page.getByLabel('where', { exact: true }).fill('project_id = $1')
  await page.getByRole('button', { name: 'Add param' }).click()
  await page.getByLabel('param 1', { exact: true }).fill('1000000005')
  await page.getByLabel('replica', { exact: true }).selectOption('full')
  await page.getByLabel('log', { exact: true }).selectOption('changes_only')
  await page.getByLabel('start offset', { exact: true }).selectOption('now')
  await page.getByRole('button', { name: 'Start', exact: true }).click()
  await expect(page.getByTestId('phase')).toHaveText('live')
  await expect(page.getByTestId('row-count')).toHaveText('0 rows')
  await tab(page, 'Subset')
}

const subsetMethod = (page: Page, method: 'POST' | 'GET') =>
  page.getByRole('radiogroup', { name: 'subset method' }).getByRole('radio', { name: method }).check()

test('requests a subset by POST and by GET into a changes_only shape and explains its metadata', async ({
  page,
  openApp
}) => {
  await openApp(page, 'shapes')
  await composeChangesOnly(page)
  await page.getByLabel('subset where').fill('id <= $1')
  await page.getByRole('button', { name: 'Add subset param' }).click()
  await page.getByLabel('subset param value 1').fill('2000')
  await page.getByLabel('subset order by').fill('id DESC')
  await page.getByLabel('subset limit').fill('4')
  await expect(page.getByTestId('subset-body')).toContainText('"order_by": "id DESC"')
  await expect(page.getByTestId('subset-body')).toContainText('"params": {\n    "1": "2000"\n  }')
  await page.getByRole('button', { name: 'Request subset' }).click()
  await expect(page.getByTestId('subset-row-count')).toContainText('4 rows by POST')
  await expect(page.getByRole('table', { name: 'Subset rows' }).locator('tbody tr')).toHaveCount(4)
  const metadata = page.getByTestId('subset-metadata')
  await expect(metadata).toContainText(/xmin \d+/)
  await expect(metadata).toContainText(/database_lsn \d+/)
  await expect(page.getByTestId('subset-dropped')).toContainText('No change so far')
  await shot(page, 'subset-post')

  await subsetMethod(page, 'GET')
  await page.getByLabel('subset offset').fill('4')
  await expect(page.getByTestId('subset-get-url')).toContainText('subset__order_by=id+DESC')
  await expect(page.getByTestId('subset-url-length')).toContainText(/GET URL: \d+ characters/)
  await page.getByRole('button', { name: 'Request subset' }).click()
  await expect(page.getByTestId('subset-row-count')).toContainText('4 rows by GET')
  await tab(page, 'Rows')
  await expect(page.getByTestId('row-count')).toHaveText('8 rows')
  await tab(page, 'Requests & cache')
  await expect(page.getByTestId('requests').locator('tr', { hasText: 'subset__order_by' }).first()).toBeVisible()
})

test('shows the 414 of a GET subset too long for a URL and sends it as POST in one click', async ({
  page,
  openApp
}) => {
  await openApp(page, 'shapes')
  await composeChangesOnly(page)
  await subsetMethod(page, 'GET')
  await page
    .getByLabel('subset where')
    .fill(`id IN (${Array.from({ length: 2_000 }, (_, index) => index + 1).join(', ')})`)
  await expect(page.getByTestId('subset-url-length')).toContainText('expect 414')
  await page.getByRole('button', { name: 'Request subset' }).click()
  const failure = page.getByTestId('subset-failure')
  await expect(failure).toContainText('HTTP 414')
  await expect(failure).toContainText('POST')
  await shot(page, 'subset-414')
  await failure.getByRole('button', { name: 'Send as POST' }).click()
  await expect(page.getByTestId('subset-row-count')).toContainText('by POST')
  await expect(failure).toBeHidden()
})

test('shows a subset validation error from the server next to its field', async ({ page, openApp }) => {
  await openApp(page, 'shapes')
  await composeChangesOnly(page)
  await page.getByLabel('subset order by').fill('pg_sleep(5)')
  await page.getByLabel('subset limit').fill('1')
  await page.getByRole('button', { name: 'Request subset' }).click()
  await expect(page.getByTestId('subset-error-order_by')).toBeVisible()
  await expect(page.getByTestId('subset-row-count')).toBeHidden()
  await page.getByLabel('subset where').fill('no_such_column = 1')
  await page.getByLabel('subset order by').fill('id')
  await page.getByRole('button', { name: 'Request subset' }).click()
  await expect(page.getByTestId('subset-error-where')).toContainText('no_such_column')
  await shot(page, 'subset-validation')
})

test('with the proxy as target but not running, says so and how to start it', async ({ page, openApp }) => {
  await openApp(page, 'shapes')
  await page.getByLabel('table', { exact: true }).selectOption('issues')
  await page.getByLabel('target', { exact: true }).selectOption('proxy')
  await expect(page.getByTestId('proxy-not-running')).toContainText('Start the proxy')
  await expect(page.getByTestId('proxy-not-running')).toContainText('--proxy-config FILE')
  await expect(page.getByRole('button', { name: 'Start', exact: true })).toBeDisabled()
})
