import { test, expect } from './fixtures'

type ErrorBody = { error: { code: string } }

test.describe('foundation: Database view and SQL console', () => {
  test('the Database view lists the demo tables with columns and row counts', async ({ page, openApp }) => {
    await openApp(page, 'database')
    await expect(page.getByTestId('db-state')).toHaveText('connected')
    for (const table of ['projects', 'users', 'issues', 'comments', 'issue_watchers', '"UserSettings"']) {
      await expect(page.getByRole('article', { name: `table ${table}` })).toBeVisible()
    }
    await expect(page.getByTestId('rows-issues')).toHaveText('3,000 rows')
    await expect(
      page.getByRole('article', { name: 'table issues' }).getByText('issue_status', { exact: true })
    ).toBeVisible()
    await page.screenshot({ path: test.info().outputPath('database-view.png'), fullPage: true })
  })

  test('a statement in the SQL console changes data and the Database view shows it', async ({ page, openApp }) => {
    await openApp(page, 'sql')
    await page
      .getByLabel('SQL')
      .fill(
        "INSERT INTO users (id, email, name) VALUES (gen_random_uuid(), 'e2e-' || gen_random_uuid() || '@example.com', 'E2E');"
      )
    await page.getByRole('button', { name: /Run/ }).click()
    await expect(page.getByTestId('sql-results')).toContainText('INSERT — 1 row')
    await page.getByRole('link', { name: 'Database' }).click()
    await expect(page.getByTestId('rows-users')).toHaveText(/^20[1-9] rows$/)
    await page.getByRole('link', { name: 'SQL console' }).click()
    await page.getByLabel('SQL').fill('SELECT count(*) FROM users')
    await page.getByRole('button', { name: /Run/ }).click()
    await expect(page.getByTestId('sql-results')).toContainText('SELECT — 1 row')
    await expect(page.getByRole('region', { name: 'History' })).toContainText('INSERT 1')
    await page.screenshot({ path: test.info().outputPath('sql-console.png'), fullPage: true })
  })

  test('an invalid statement shows the Postgres error with code and position', async ({ page, openApp }) => {
    await openApp(page, 'sql')
    await page.getByLabel('SQL').fill('SELECT * FROM issues WHERE idd = 1')
    await page.getByRole('button', { name: /Run/ }).click()
    const error = page.getByTestId('sql-error')
    await expect(error).toContainText('ERROR 42703: column "idd" does not exist')
    await expect(error).toContainText('at character 28')
  })
})

test.describe('foundation: the HTTP contract is guarded', () => {
  test('refuses a missing or wrong token and a foreign Origin', async ({ app }) => {
    const url = `${app.baseUrl}/rpc/db.status`
    const json = { 'content-type': 'application/json' }
    const noToken = await fetch(url, { method: 'POST', headers: json, body: '{}' })
    expect(noToken.status).toBe(401)
    expect(((await noToken.json()) as ErrorBody).error.code).toBe('missing_token')
    const foreignOrigin = await fetch(url, {
      method: 'POST',
      headers: { ...json, 'x-syncscope-token': app.token, origin: 'http://evil.example' },
      body: '{}'
    })
    expect(foreignOrigin.status).toBe(403)
    expect(((await foreignOrigin.json()) as ErrorBody).error.code).toBe('foreign_origin')
    const wrongToken = await fetch(url, {
      method: 'POST',
      headers: { ...json, 'x-syncscope-token': 'not-the-token' },
      body: '{}'
    })
    expect(wrongToken.status).toBe(401)
    const ok = await fetch(url, {
      method: 'POST',
      headers: { ...json, 'x-syncscope-token': app.token, origin: app.baseUrl },
      body: '{}'
    })
    expect(ok.status).toBe(200)
    expect(((await ok.json()) as { result: { state: string } }).result.state).toBe('connected')
  })

  test('a page without the token cookie gets no UI', async ({ page, app }) => {
    const response = await page.goto(app.baseUrl)
    expect(response?.status()).toBe(401)
  })
})
