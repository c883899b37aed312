import { spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findFreePort } from '../../src/main/net/free-port'
import { endServe, startTestPostgres, type TestPostgres } from '../support/postgres'
import { waitFor } from './support/processes'

const BIN = resolve(__dirname, '../../bin/syncscope.js')

/** A GET with the Host header as given (fetch would send the URL's own). */
function get(port: number, path: string, host = `127.0.0.1:${port}`): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => (body += chunk.toString()))
      res.on('end', () => done({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', fail)
    req.end()
  })
}

describe('the OAuth callback listener of `syncscope serve`', () => {
  let postgres: TestPostgres
  let dataDir: string
  let serve: ChildProcess
  let output = ''
  let port: number

  beforeAll(async () => {
    postgres = await startTestPostgres()
    dataDir = await mkdtemp(join(tmpdir(), 'syncscope-callback-'))
    port = await findFreePort()
    // an authorization-code server with its redirect on a known loopback port: the listener is up from the start
    await writeFile(
      join(dataDir, 'settings.json'),
      JSON.stringify({
        mcp: {
          servers: {
            secured: {
              transport: 'http',
              url: 'http://127.0.0.1:9/mcp',
              auth: { mode: 'authorizationCode', redirectUri: `http://127.0.0.1:${port}/oauth/callback/secured` }
            }
          }
        }
      })
    )
    // a workspace mcp.json nobody approved: the banner says its servers do not run
    await writeFile(join(dataDir, 'mcp.json'), JSON.stringify({ servers: {} }))
    serve = spawn(
      process.execPath,
      [BIN, 'serve', '--port', '0', '--data-dir', dataDir, '--workspace', dataDir, '--database', postgres.url],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SHELL: '/bin/sh' } }
    )
    serve.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    serve.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    await waitFor('syncscope serve to start', () => output.includes('Press Ctrl+C to stop.'), 90_000)
  })
  afterAll(async () => {
    if (serve) await endServe(serve)
    await postgres?.destroy()
    await rm(dataDir, { recursive: true, force: true })
  })

  it('says at start-up that an unapproved workspace mcp.json runs nothing', () => {
    expect(output).toContain(
      `${join(dataDir, 'mcp.json')} is not approved: its servers do not run until you approve it (the MCP page, or \`syncscope mcp trust\`)`
    )
  })

  it('answers 400 to a malformed escape in the path and keeps serving', async () => {
    const malformed = await get(port, '/oauth/callback/%ZZ')
    expect(malformed.status).toBe(400)
    expect(malformed.body).toContain('not a valid callback path')
    expect(serve.exitCode).toBeNull()
    expect(output).not.toMatch(/URIError/)
    // the listener still answers callbacks, here one without a login in flight
    const stray = await get(port, '/oauth/callback/secured?code=c&state=s')
    expect(stray.status).toBe(400)
    expect(stray.body).toContain('no login is in flight for secured')
  })

  it('refuses a foreign Host, as every other server of the app does (DNS rebinding)', async () => {
    const rebound = await get(port, '/oauth/callback/secured?code=c&state=s', `attacker.test:${port}`)
    expect(rebound.status).toBe(403)
    expect(rebound.body).toContain("Host 'attacker.test:")
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`])
      expect((await get(port, '/oauth/callback/secured?code=c&state=s', host)).status, host).toBe(400)
    expect(serve.exitCode).toBeNull()
  })
})
