import { readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { test, expect } from './fixtures'
import { startAuthServer, type RunningAuthServer } from '../test/mcp/support/oauth-server'
import { startMcpHttpServer, type RunningMcpHttpServer } from '../test/mcp/support/mcp-http-server'
import { ecKey, jwtClient, pem } from '../test/mcp/support/jwt-client'
import { startProtectedServer, type ProtectedServer } from '../test/mcp/support/protected-server'

const EVERYTHING = resolve(__dirname, '../node_modules/@modelcontextprotocol/server-everything/dist/index.js')

test.describe('MCP servers page', () => {
  test('add a stdio server in the form, see its tools and call one', async ({ page, openApp }) => {
    await openApp(page, 'mcp')
    await page.getByTestId('mcp-add').click()
    await page.getByTestId('mcp-field-name').fill('everything')
    await page.getByTestId('mcp-field-command').fill(process.execPath)
    await page.getByTestId('mcp-field-args').fill(`${EVERYTHING}\nstdio`)
    await page.getByTestId('mcp-field-timeoutMs').fill('-5')
    await expect(page.getByTestId('mcp-field-timeoutMs-issue')).toContainText('timeoutMs must be a positive number')
    await expect(page.getByTestId('mcp-save')).toBeDisabled()
    await page.getByTestId('mcp-field-timeoutMs').fill('20000')
    await page.getByTestId('mcp-save').click()
    // Saving selects the server, and listing its tools is its first use: the process starts now.
    await page.getByTestId('mcp-tool-mcp__everything__echo').click()
    await page.getByTestId('mcp-arg-message').fill('hello from the page')
    await page.getByTestId('mcp-call').click()
    await expect(page.getByTestId('mcp-call-result')).toContainText('Echo: hello from the page')
    await expect(page.getByTestId('mcp-call-result')).toContainText(/ok in \d+ ms/)
    await expect(page.getByTestId('mcp-state-everything')).toHaveText('connected')
    await page.screenshot({ path: test.info().outputPath('mcp-tool-call.png'), fullPage: true })
  })

  test('an invalid edit shows an error entry while the other servers keep working', async ({ page, openApp, app }) => {
    await writeFile(
      join(app.dataDir, 'mcp.json'),
      JSON.stringify({
        servers: {
          broken: {
            transport: 'http',
            url: 'https://example.invalid/mcp',
            auth: {
              mode: 'clientCredentials',
              tokenUrl: 'https://example.invalid/token',
              clientIdRef: 'x',
              clientSecretRef: 'y'
            }
          },
          fine: { transport: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] }
        }
      })
    )
    // the workspace file is the person's own: approved as it is, once the app has read it (the review and approval
    // on the page: mcp-trust.spec.ts)
    const review = () => app.call<{ sha256: string; servers: unknown[] } | null>('mcp.workspaceReview')
    await expect.poll(async () => (await review())?.servers.length).toBe(2)
    await app.call('mcp.approveWorkspace', { sha256: (await review())!.sha256 })
    await openApp(page, 'mcp')
    await expect(page.getByTestId('mcp-state-broken')).toHaveText('error')
    await expect(page.getByTestId('mcp-error-broken')).toContainText(
      'clientIdRef, clientSecretRef: secrets are given inline'
    )
    await expect(page.getByTestId('mcp-state-fine')).toHaveText(/idle/)
    await page.getByTestId('mcp-row-fine').getByRole('button', { name: 'fine' }).click()
    await expect(page.getByTestId('mcp-tool-mcp__fine__get-sum')).toBeVisible()

    await page.getByTestId('mcp-edit-fine').click()
    await page.getByTestId('mcp-json-tab').click()
    await page.getByTestId('mcp-json').fill('{ "transport": "stdio", ')
    await expect(page.getByTestId('mcp-json-error')).toContainText('not valid JSON')
    await page.getByTestId('mcp-json').fill('{ "transport": "carrier-pigeon" }')
    await expect(page.getByTestId('mcp-json-issue')).toContainText('transport must be "http" or "stdio"')
    await expect(page.getByTestId('mcp-save')).toBeDisabled()
    await page.screenshot({ path: test.info().outputPath('mcp-error-entry.png'), fullPage: true })
  })

  test.describe('client credentials with a private key (private_key_jwt)', () => {
    const { privateKey, publicKey } = ecKey()
    const stops: Array<() => Promise<void>> = []
    let server: ProtectedServer
    test.beforeAll(async () => {
      server = await startProtectedServer(stops, {}, { clients: [jwtClient(publicKey)] })
    })
    test.afterAll(async () => {
      for (const stop of stops.splice(0).reverse()) await stop()
    })

    test('the key pasted in the form goes to the secret store, never to the file or back to the page', async ({
      page,
      openApp,
      app
    }) => {
      await openApp(page, 'mcp')
      await page.getByTestId('mcp-add').click()
      await page.getByTestId('mcp-field-name').fill('signed')
      await page.getByTestId('mcp-field-transport').selectOption('http')
      await page.getByTestId('mcp-field-url').fill(server.rs.url)
      await page.getByTestId('mcp-field-auth.mode').selectOption('clientCredentials')
      await page.getByTestId('mcp-field-auth.clientId').fill('jwt-client')
      await expect(page.getByTestId('mcp-field-auth.clientSecret-issue')).toContainText('give clientSecret')
      await page.getByTestId('mcp-field-auth.privateKey').fill('not a key')
      await expect(page.getByTestId('mcp-field-auth.privateKey-issue')).toContainText('must be a PEM private key')
      await page.getByTestId('mcp-field-auth.privateKey').fill(pem(privateKey))
      await page.getByTestId('mcp-field-auth.signingAlgorithm').selectOption('ES256')
      await page.getByTestId('mcp-save').click()
      await expect(page.getByTestId('mcp-state-signed')).toHaveText('connected')
      const settings = await readFile(join(app.dataDir, 'settings.json'), 'utf8')
      expect(settings).toContain('"privateKey": "${keychain:auth.privateKey}"')
      expect(settings).not.toContain('PRIVATE KEY')
      // without tokenUrl, found from the server: the one token request was signed, and accepted
      expect(server.as.tokenPosts('client_credentials').map((post) => post.status)).toEqual([200])
      await page.getByTestId('mcp-edit-signed').click()
      // the editor shows the entry as written: where the key is, not the key
      await expect(page.getByTestId('mcp-field-auth.privateKey')).toHaveValue('${keychain:auth.privateKey}')
      const keyLine = pem(privateKey).split('\n')[1]!
      expect(await page.content()).not.toContain(keyLine)
      // and the entry as written can be saved again as it is (the key stays where it is)
      await expect(page.getByTestId('mcp-field-auth.privateKey-issue')).toHaveCount(0)
      await page.getByTestId('mcp-field-auth.scopes').fill('mcp:tools')
      await page.getByTestId('mcp-save').click()
      await expect
        .poll(
          async () => JSON.parse(await readFile(join(app.dataDir, 'settings.json'), 'utf8')).mcp.servers.signed.auth
        )
        .toEqual({
          mode: 'clientCredentials',
          clientId: 'jwt-client',
          privateKey: '${keychain:auth.privateKey}',
          signingAlgorithm: 'ES256',
          scopes: ['mcp:tools']
        })
      await expect(page.getByTestId('mcp-state-signed')).toHaveText('connected')
    })
  })

  test.describe('OAuth', () => {
    let as: RunningAuthServer
    let rs: RunningMcpHttpServer
    test.beforeAll(async () => {
      let issuer = ''
      rs = await startMcpHttpServer({ kind: 'oauth', issuer: () => issuer })
      as = await startAuthServer({ resource: rs.url })
      issuer = as.issuer
    })
    test.afterAll(async () => {
      await as?.stop()
      await rs?.stop()
    })

    test('Log in opens the authorisation page in a new tab and the row turns connected', async ({
      page,
      openApp,
      app
    }) => {
      await app.call('mcp.save', {
        name: 'secured',
        entry: { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } }
      })
      await openApp(page, 'mcp')
      await expect(page.getByTestId('mcp-state-secured')).toHaveText('needs login')
      await page.getByTestId('mcp-row-secured').getByRole('button', { name: 'secured' }).click()
      const popupOpened = page.waitForEvent('popup')
      await page.getByTestId('mcp-login').click()
      const popup = await popupOpened
      await popup.locator('input[name=login]').fill('alice')
      await popup.locator('input[name=password]').fill('pw')
      await popup.locator('button[type=submit]').click()
      await popup.locator('button[type=submit]').click()
      await expect(popup.getByTestId('oauth-result')).toContainText('secured is connected')
      await expect(page.getByTestId('mcp-state-secured')).toHaveText('connected')
      const steps = page.getByTestId('mcp-oauth-steps')
      for (const step of ['discovery', 'registration', 'authorization', 'callback', 'token'])
        await expect(steps).toContainText(step)
      await expect(page.getByTestId('mcp-token-status')).toContainText('…')
      await page.getByTestId('mcp-tool-mcp__secured__echo').click()
      await page.getByTestId('mcp-arg-text').fill('through OAuth')
      await page.getByTestId('mcp-call').click()
      await expect(page.getByTestId('mcp-call-text')).toHaveText('through OAuth')
      await page.screenshot({ path: test.info().outputPath('mcp-oauth.png'), fullPage: true })
      await page.getByTestId('mcp-logout').click()
      await expect(page.getByTestId('mcp-state-secured')).toHaveText('needs login')
    })
  })
})
