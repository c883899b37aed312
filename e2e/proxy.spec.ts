import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { expect, test } from './fixtures'

/** The sample config in a folder of its own: the page saves into it. */
const configDir = mkdtempSync(join(tmpdir(), 'syncscope-e2e-proxy-'))
const configPath = join(configDir, 'proxy.json')
copyFileSync(resolve(__dirname, '../resources/proxy/sample-config.json'), configPath)

test.afterAll(() => rmSync(configDir, { recursive: true, force: true }))

test.use({ appArgs: ['--proxy-config', configPath, '--proxy-port', '0'], viewport: { width: 1400, height: 2400 } })

test('the playground calls a named shape as two users and shows what the proxy did', async ({ page, openApp, app }) => {
  expect(app.output()).toMatch(/Proxy\s+http:\/\/127\.0\.0\.1:\d+/)
  await openApp(page, 'proxy')
  await expect(page.getByRole('heading', { name: 'Proxy playground' })).toBeVisible()
  await expect(page.getByTestId('proxy-url')).toHaveText(/^http:\/\/127\.0\.0\.1:\d+$/)
  await page.getByLabel('User A').selectOption({ label: 'Grace 1 (member)' })
  await page.getByLabel('User B').selectOption({ label: 'Dennis 7 (member)' })
  await page.getByRole('button', { name: 'Send' }).click()
  for (const side of ['a', 'b']) {
    const result = page.getByTestId(`try-result-${side}`)
    await expect(result.getByTestId('status')).toHaveText('200')
    await expect(result.getByTestId('row-count')).toHaveText(/^\d+ rows?$/)
    await expect(result.getByTestId('upstream-request').locator('tr.server-set')).toHaveCount(4)
    await expect(result.getByTestId('response-headers')).toContainText('Authorization')
  }
  const [grace, dennis] = ['24c9e15e-52af-c47c-225b-757e7bee1f9d', '3e0469fb-1349-91f8-f75a-2760e409c6ed']
  await expect(page.getByTestId('try-result-a').getByTestId('rows')).toContainText(grace)
  await expect(page.getByTestId('try-result-a').getByTestId('rows')).not.toContainText(dennis)
  await expect(page.getByTestId('try-result-b').getByTestId('rows')).toContainText(dennis)
  await expect(page.getByTestId('try-result-b').getByTestId('rows')).not.toContainText(grace)
  await page.screenshot({ path: test.info().outputPath('named-shape-two-users.png'), fullPage: true })

  await page.getByLabel('User B').selectOption({ label: 'Visitor (no roles)' })
  await page.getByRole('button', { name: 'Send' }).click()
  const visitor = page.getByTestId('try-result-b')
  await expect(visitor.getByTestId('status')).toHaveText('403')
  await expect(visitor.getByTestId('explanation')).toContainText('none of their roles')
  await expect(visitor).toContainText('The proxy answered itself')
})

test('the playground goes through the gatekeeper and shows the shape token', async ({ page, openApp }) => {
  await openApp(page, 'proxy')
  await page.getByLabel('Pattern').selectOption('gatekeeper')
  await page.getByLabel('Table').selectOption('issues')
  await page.getByLabel('Where').fill('priority > 0')
  await page.getByLabel('User A').selectOption({ label: 'Grace 1 (member)' })
  await page.getByLabel('User B').selectOption({ label: 'no credentials' })
  await page.getByRole('button', { name: 'Send' }).click()
  const grace = page.getByTestId('try-result-a')
  await expect(grace.getByTestId('status')).toHaveText(['200', '200'])
  await expect(grace.getByText('Shape token claims')).toBeVisible()
  await expect(grace.locator('pre.claims').nth(1)).toContainText('owner_id = $1 AND priority > 0')
  const anonymous = page.getByTestId('try-result-b')
  await expect(anonymous.getByTestId('status')).toHaveText('401')
  await expect(anonymous.getByTestId('explanation')).toContainText('No token was sent')
  await page.screenshot({ path: test.info().outputPath('gatekeeper.png'), fullPage: true })
})

test('a bad config is refused with its issues and the config in force stays', async ({ page, openApp }) => {
  await openApp(page, 'proxy')
  const editor = page.getByLabel('Proxy config')
  await expect(editor).toHaveValue(/"my-issues"/)
  const good = await editor.inputValue()
  await editor.fill(good.replace('"owner_id = $1"', '"owner_id = $1 OR"'))
  await page.getByRole('button', { name: 'Save config' }).click()
  await expect(page.getByTestId('config-error')).toContainText('shapes.my-issues.rowFilter.where')
  await page.getByRole('button', { name: 'Send' }).click()
  await expect(page.getByTestId('try-result-a').getByTestId('status')).toHaveText('200')
  await editor.fill(good.replace('"Visitor"', '"Guest"'))
  await page.getByRole('button', { name: 'Save config' }).click()
  await expect(page.getByText('saved and in force')).toBeVisible()
  await expect(page.getByLabel('User B')).toContainText('Guest (no roles)')
})

test.describe('the Shape workbench through the proxy', () => {
  const GRACE = '24c9e15e-52af-c47c-225b-757e7bee1f9d'
  const DENNIS = '3e0469fb-1349-91f8-f75a-2760e409c6ed'
  const JWT = /eyJ[\w-]+\.[\w-]+\.[\w-]+/

  test('streams a named shape as one user, then another, with Vary: Authorization on the answers', async ({
    page,
    openApp
  }) => {
    await openApp(page, 'shapes')
    await page.getByLabel('target', { exact: true }).selectOption('proxy')
    await expect(page.getByTestId('workbench-proxy-url')).toHaveText(/^http:\/\/127\.0\.0\.1:\d+$/)
    await page.getByLabel('proxy shape').selectOption('my-issues')
    await page.getByLabel('proxy user').selectOption({ label: 'Grace 1 (member)' })
    await page.getByRole('button', { name: 'Start', exact: true }).click()
    const rows = page.getByRole('table', { name: 'Shape rows' })
    await expect(page.getByTestId('phase')).toHaveText('live')
    await expect(page.getByTestId('row-count')).toHaveText(/^[1-9]\d* rows?$/)
    await expect(rows).toContainText(GRACE)
    await expect(rows).not.toContainText(DENNIS)
    await page.screenshot({ path: test.info().outputPath('workbench-proxy-grace.png'), fullPage: true })

    await page.getByLabel('proxy user').selectOption({ label: 'Dennis 7 (member)' })
    await page.getByRole('button', { name: 'Restart', exact: true }).click()
    await expect(rows).toContainText(DENNIS)
    await expect(rows).not.toContainText(GRACE)

    await page.getByRole('tab', { name: 'Requests & cache' }).click()
    await page.getByTestId('requests').locator('tr[data-request="#1"]').click()
    const detail = page.getByTestId('exchange-detail')
    await expect(detail).toContainText('/api/shapes/my-issues?')
    await expect(detail.locator('tr', { hasText: /^vary/ })).toContainText('Authorization')
    await expect(detail.locator('tr', { hasText: /^authorization/ })).toContainText(/^authorizationBear…\(\d+ chars\)$/)
    expect(await page.content()).not.toMatch(JWT)
    await page.screenshot({ path: test.info().outputPath('workbench-proxy-requests.png'), fullPage: true })
  })

  test('goes through the gatekeeper for a composed shape and keeps the token out of saved shapes', async ({
    page,
    openApp,
    app
  }) => {
    await openApp(page, 'shapes')
    await page.getByLabel('table', { exact: true }).selectOption('issues')
    await page.getByLabel('where', { exact: true }).fill('priority > 0')
    await page.getByLabel('target', { exact: true }).selectOption('proxy')
    await page.getByLabel('proxy route').selectOption('gatekeeper')
    await page.getByLabel('proxy user').selectOption({ label: 'Grace 1 (member)' })
    await page.getByRole('button', { name: 'Start', exact: true }).click()
    const rows = page.getByRole('table', { name: 'Shape rows' })
    await expect(page.getByTestId('phase')).toHaveText('live')
    await expect(rows).toContainText(GRACE)
    await expect(rows).not.toContainText(DENNIS)
    await page.getByRole('tab', { name: 'Log' }).click()
    await expect(page.getByText(/the gatekeeper granted issues where owner_id = \$1 AND priority > 0/)).toBeVisible()
    await page.getByRole('tab', { name: 'Requests & cache' }).click()
    await expect(page.getByTestId('requests')).toContainText('/proxy/v1/shape?')

    await page.getByLabel('shape name').fill('grace via gatekeeper')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    const saved = () => app.call<Array<{ name: string; target: unknown }>>('shapesWorkbench.saved')
    // the click only starts the save: wait for it to land
    await expect
      .poll(async () => (await saved()).find((shape) => shape.name === 'grace via gatekeeper')?.target)
      .toEqual({ kind: 'proxy', route: 'gatekeeper', shapeName: '', userId: GRACE })
    expect(JSON.stringify(await saved())).not.toMatch(JWT)
  })
})
