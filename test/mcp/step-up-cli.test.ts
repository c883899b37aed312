import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProtectedServer, type ProtectedServer } from './support/protected-server'
import { runMcpCli } from './support/run-cli'
import { installStandInBrowser, type StandInBrowser } from './support/stand-in-browser'

// `syncscope mcp call` meets a 403 insufficient_scope: it logs in for the wider scope in the browser, as `mcp login`
// does, and calls again; with --no-open it stops at once and says which scope and which command. An SDK server
// behind oidc-provider whose `admin` and `audit` tools need scopes beyond mcp:tools.

const stops: Array<() => Promise<void>> = []
let dir: string
let server: ProtectedServer
let browser: StandInBrowser

const cli = (args: string[]) =>
  runMcpCli([...args, '--config', join(dir, 'mcp.json'), '--data-dir', join(dir, 'data')], {
    cwd: dir,
    env: { PATH: browser.path }
  })

/** How many authorisation requests reached the authorisation server. */
const authorizationRequests = () => server.as.requests.filter((request) => request.path === '/auth').length

describe('step-up from the CLI (syncscope mcp call, a subprocess)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-step-up-'))
    browser = await installStandInBrowser(dir)
    server = await startProtectedServer(
      stops,
      { toolScopes: { admin: ['mcp:admin'], audit: ['mcp:audit'] } },
      { extraScopes: ['mcp:admin', 'mcp:audit'] }
    )
    await writeFile(
      join(dir, 'mcp.json'),
      JSON.stringify({
        servers: {
          secured: { transport: 'http', url: server.rs.url, auth: { mode: 'authorizationCode', scopes: ['mcp:tools'] } }
        }
      })
    )
    const login = await cli(['login', 'secured'])
    expect(login.stderr).not.toContain('syncscope mcp:')
    expect(login.code).toBe(0)
  })
  afterAll(async () => {
    for (const stop of stops.splice(0).reverse()) await stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('with --no-open fails at once, naming the scope and the command that logs in with it', async () => {
    const before = authorizationRequests()
    const run = await cli(['call', 'secured', 'admin', '--no-open'])
    expect(run.code).toBe(1)
    // at once: it used to wait five minutes for a login nobody was shown
    expect(run.ms).toBeLessThan(15_000)
    expect(run.stderr).toContain('needs the scope "mcp:tools mcp:admin"')
    expect(run.stderr).toContain('syncscope mcp login secured --scope "mcp:tools mcp:admin"')
    // nothing was sent to the authorisation server: it stopped at the 403
    expect(authorizationRequests()).toBe(before)
    // the command it names does log in with that scope, after which the call goes through
    const login = await cli(['login', 'secured', '--scope', 'mcp:tools mcp:admin'])
    expect(login.code).toBe(0)
    const again = await cli(['call', 'secured', 'admin', '--no-open'])
    expect(again.stdout).toBe('admin done\n')
    expect(again.code).toBe(0)
  })

  it('opens the browser for the wider scope, as mcp login does, and calls again once logged in', async () => {
    const run = await cli(['call', 'secured', 'audit'])
    expect(run.stdout).toBe('audit done\n')
    expect(run.code).toBe(0)
    expect(run.stderr).toMatch(/Open this URL to log in to secured .*mcp:audit/)
    const opened = await readFile(browser.log, 'utf8')
    expect(opened).toMatch(/scope=mcp%3Atools(\+|%20)mcp%3Aadmin(\+|%20)mcp%3Aaudit/)
  })
})
