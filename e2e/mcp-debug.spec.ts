import { mkdtempSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { test, expect } from './fixtures'

// The MCP page's debugging and export panels against a real SDK server (test/mcp/support/debug-fixture.mjs) and a
// HOME of the app's own, so the other hosts' config files it shows and writes are under it, never the real ones.

const DEBUG_FIXTURE = resolve(__dirname, '../test/mcp/support/debug-fixture.mjs')
const HOME = mkdtempSync(join(tmpdir(), 'syncscope-e2e-home-'))
const SECRET = 'tok-e2e-5ecret-98765'

test.use({ appEnv: { HOME, XDG_CONFIG_HOME: join(HOME, '.config') } })

test.describe('MCP page: tool debugging, questions from servers, export to other apps', () => {
  test.beforeAll(async ({ app }) => {
    await app.call('mcp.save', {
      name: 'debug',
      entry: { transport: 'stdio', command: process.execPath, args: [DEBUG_FIXTURE], env: { API_TOKEN: SECRET } }
    })
  })

  test('the tool explorer shows the raw JSON-RPC, output-schema violations and followed resource links', async ({
    page,
    openApp
  }) => {
    await openApp(page, 'mcp')
    await page.getByTestId('mcp-row-debug').getByRole('button', { name: 'debug' }).click()

    await page.getByTestId('mcp-tool-mcp__debug__weather').click()
    await page.getByTestId('mcp-call').click()
    const result = page.getByTestId('mcp-call-result')
    await expect(result).toContainText(/ok in \d+ ms/)
    await expect(result).toContainText('structuredContent matches the output schema')
    await result.getByTestId('mcp-call-rpc').locator('summary').click()
    await expect(result.getByTestId('mcp-call-rpc')).toContainText('"method": "tools/call"')
    await expect(result.getByTestId('mcp-call-rpc')).toContainText('"celsius": -3')

    await page.getByTestId('mcp-tool-mcp__debug__broken').click()
    await page.getByTestId('mcp-call').click()
    await expect(result).toContainText(/failed in \d+ ms/)
    await expect(page.getByTestId('mcp-output-errors')).toContainText('structuredContent violates the output schema')
    await expect(page.getByTestId('mcp-output-errors')).toContainText('celsius')
    await expect(page.getByTestId('mcp-call-text')).toHaveText('hot')

    await page.getByTestId('mcp-tool-mcp__debug__report').click()
    await page.getByTestId('mcp-call').click()
    const links = page.getByTestId('mcp-resource-link')
    await expect(links).toHaveCount(2)
    await links.nth(0).locator('summary').click()
    await expect(links.nth(0)).toContainText('fixture://reports/1')
    await expect(links.nth(0)).toContainText('report one: all green')
    await expect(links.nth(1)).toContainText('fixture://reports/missing — ')
    await expect(links.nth(1)).toContainText('no resource fixture://reports/missing')

    await page.getByTestId('mcp-rpc-log').locator('summary').first().click()
    await expect(page.getByTestId('mcp-rpc-log')).toContainText('resources/read')
    await page.screenshot({ path: test.info().outputPath('mcp-tool-debug.png'), fullPage: true })
  })

  test('a question from a server while its tool runs is answered in the form, and the tool gets the answer', async ({
    page,
    openApp
  }) => {
    await openApp(page, 'mcp')
    await page.getByTestId('mcp-row-debug').getByRole('button', { name: 'debug' }).click()
    await page.getByTestId('mcp-tool-mcp__debug__confirm').click()
    await page.getByTestId('mcp-call').click()
    const question = page.getByTestId('mcp-elicitation')
    await expect(question).toContainText('debug asks: Deploy to production?')
    await expect(question).toContainText('confirm *')
    await page.getByTestId('mcp-elicit-confirm').selectOption('true')
    await page.getByTestId('mcp-elicit-note').fill('after the backup')
    await page.getByTestId('mcp-elicit-accept').click()
    await expect(page.getByTestId('mcp-call-text')).toHaveText(
      '{"action":"accept","content":{"confirm":true,"note":"after the backup"}}'
    )
    await expect(page.getByTestId('mcp-elicitations')).toHaveCount(0)

    // declined: the tool hears that, and nothing waits any more
    await page.getByTestId('mcp-call').click()
    await question.getByRole('button', { name: 'Decline' }).click()
    await expect(page.getByTestId('mcp-call-text')).toHaveText('{"action":"decline"}')
  })

  test('a form with defaults (SEP-1034) comes filled in with them; what the person changes goes with the rest', async ({
    page,
    openApp
  }) => {
    await openApp(page, 'mcp')
    await page.getByTestId('mcp-row-debug').getByRole('button', { name: 'debug' }).click()
    await page.getByTestId('mcp-tool-mcp__debug__schedule').click()
    await page.getByTestId('mcp-call').click()
    await expect(page.getByTestId('mcp-elicitation')).toContainText('debug asks: Schedule the deploy?')
    await expect(page.getByTestId('mcp-elicit-when')).toHaveValue('tomorrow 09:00')
    await expect(page.getByTestId('mcp-elicit-minutes')).toHaveValue('30')
    await expect(page.getByTestId('mcp-elicit-load')).toHaveValue('0.5')
    await expect(page.getByTestId('mcp-elicit-priority')).toHaveValue('normal')
    await expect(page.getByTestId('mcp-elicit-remind')).toHaveValue('true')
    await expect(page.getByTestId('mcp-elicit-note')).toHaveValue('')
    await page.getByTestId('mcp-elicit-minutes').fill('45')
    await page.getByTestId('mcp-elicit-accept').click()
    await expect(page.getByTestId('mcp-call-text')).toHaveText(
      '{"action":"accept","content":{"when":"tomorrow 09:00","minutes":45,"load":0.5,"priority":"normal","remind":true}}'
    )
  })

  test("each host's file at its place, the diff an export makes, and the write (no secret in it)", async ({
    page,
    openApp
  }) => {
    await openApp(page, 'mcp')
    const claude = page.getByTestId('mcp-export-claude-desktop')
    const path = join(HOME, '.config', 'Claude', 'claude_desktop_config.json')
    await expect(claude).toContainText(path)
    await expect(claude).toContainText('(not created yet)')
    await expect(claude).toContainText('An export would change: +debug')
    await claude.locator('summary').click()
    await expect(page.getByTestId('mcp-export-diff-claude-desktop')).toContainText('"debug": {')
    await expect(page.getByTestId('mcp-export-diff-claude-desktop')).not.toContainText(SECRET)
    await page.getByTestId('mcp-export-apply-claude-desktop').click()
    await expect(claude).toContainText('Up to date: an export would change nothing.')
    await expect(claude).toContainText('In it now: debug')
    const written = await readFile(path, 'utf8')
    expect(written).not.toContain(SECRET)
    const entry = (JSON.parse(written) as { mcpServers: Record<string, { command: string; args: string[] }> })
      .mcpServers.debug!
    expect(entry.command).toBe(process.execPath)
    expect(entry.args.slice(1, 4)).toEqual(['mcp', 'run', 'debug'])
    // the other hosts' files are untouched and still offer the export
    await expect(page.getByTestId('mcp-export-vscode')).toContainText('An export would change: +debug')
    await page.screenshot({ path: test.info().outputPath('mcp-export.png'), fullPage: true })
  })

  test("the app's client ID metadata URL is set on the page, refused when not https, and written to settings.json", async ({
    page,
    openApp,
    app
  }) => {
    await openApp(page, 'mcp')
    const panel = page.getByTestId('mcp-client-metadata')
    await expect(page.getByTestId('mcp-client-metadata-current')).toContainText(
      'None: every authorisation server gets a dynamic registration'
    )
    await page.getByTestId('mcp-client-metadata-url').fill('http://syncscope.test/client.json')
    await page.getByTestId('mcp-client-metadata-save').click()
    await expect(panel).toContainText('must be an https:// URL with a path')
    await page.getByTestId('mcp-client-metadata-url').fill('https://syncscope.test/oauth/client.json')
    await page.getByTestId('mcp-client-metadata-save').click()
    await expect(page.getByTestId('mcp-client-metadata-current')).toHaveText('https://syncscope.test/oauth/client.json')
    await expect(panel).toContainText('(settings.json)')
    const settings = JSON.parse(await readFile(join(app.dataDir, 'settings.json'), 'utf8')) as {
      mcp: { clientMetadataUrl?: string }
    }
    expect(settings.mcp.clientMetadataUrl).toBe('https://syncscope.test/oauth/client.json')
    await page.getByTestId('mcp-client-metadata-url').fill('')
    await page.getByTestId('mcp-client-metadata-save').click()
    await expect(page.getByTestId('mcp-client-metadata-current')).toContainText('None')
  })
})
