import { chromiumArgs, chromiumPath } from './chromium'
import { expect, test } from './fixtures'
import { forwardingServer } from './forwarding-server'

// remote.test stands for a shape service elsewhere: a name that is neither the page's host nor loopback's
test.use({
  launchOptions: {
    executablePath: chromiumPath,
    args: [...chromiumArgs, '--host-resolver-rules=MAP remote.test 127.0.0.1']
  }
})

test('under the UI’s content security policy, the workbench follows a shape of a remote service (another port)', async ({
  page,
  app,
  openApp
}) => {
  // a "remote" shape service: a second server on another port, passing every request to the app's shape API
  const remote = await forwardingServer(app.baseUrl, { host: 'remote.test' })
  const blocked: string[] = []
  page.on('console', (message) => {
    if (/violates .*Content Security Policy/i.test(message.text())) blocked.push(message.text())
  })
  try {
    const ui = await page.goto(app.uiUrl)
    expect(ui?.headers()['content-security-policy']).toContain('connect-src')
    await openApp(page, 'shapes')
    await page.getByLabel('target', { exact: true }).selectOption('custom')
    await expect(page.getByLabel('shape URL', { exact: true })).toHaveValue(`${app.baseUrl}/v1/shape`)
    await page.getByLabel('shape URL', { exact: true }).fill(`${remote.url}/v1/shape`)
    await page.getByLabel('table', { exact: true }).selectOption('projects')
    await page.getByLabel('where', { exact: true }).fill('id <= 1000000003')
    await page.getByLabel('live mode').selectOption('long-poll')
    // the workbench's worker runs under the same policy (a worker takes it from its own response)
    const workerScript = page.waitForResponse((response) => /\/assets\/worker-[\w-]+\.js$/.test(response.url()))
    await page.getByRole('button', { name: 'Start', exact: true }).click()
    expect((await workerScript).headers()['content-security-policy']).toBe(ui?.headers()['content-security-policy'])
    await expect(page.getByTestId('row-count')).toHaveText('3 rows')
    await app.call('db.query', { sql: `UPDATE projects SET name = 'seen through the remote' WHERE id = 1000000002` })
    await expect(page.getByRole('table', { name: 'Shape rows' })).toContainText('seen through the remote')
    expect(blocked).toEqual([])
  } finally {
    remote.close()
  }
})
