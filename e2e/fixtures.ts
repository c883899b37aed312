import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { test as base, expect, type Page } from '@playwright/test'
import { removeDataDir } from '../test/support/postgres'
import { needFacilities } from './facilities'

export interface RunningHeadlessApp {
  /** http://127.0.0.1:<port> — the shape API, the contract and the UI. */
  baseUrl: string
  /** The printed URL that opens the UI with its token. */
  uiUrl: string
  token: string
  dataDir: string
  /** Calls the HTTP contract with the token, as the renderer does. */
  call<T = unknown>(name: string, input?: unknown): Promise<T>
  /** Everything the process printed so far. */
  output(): string
}

export interface AppOptions {
  /** Extra arguments for `syncscope serve`, per worker. */
  appArgs: string[]
  /** Environment variables over ours for `syncscope serve` (e.g. a HOME of its own), per worker. */
  appEnv: Record<string, string>
}

const ROOT = resolve(__dirname, '..')

async function startHeadlessApp(
  args: string[],
  env: Record<string, string> = {}
): Promise<{ app: RunningHeadlessApp; stop(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-e2e-'))
  const child: ChildProcess = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/syncscope.js'),
      'serve',
      '--ui',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--workspace',
      dataDir,
      ...args
    ],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    }
  )
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const uiUrl = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`syncscope serve did not start:\n${output}`)), 60_000)
    const check = () => {
      const match = /Syncscope UI\s+(\S+)/.exec(output)
      if (match?.[1]) {
        clearTimeout(timer)
        resolveUrl(match[1])
      }
    }
    child.stdout?.on('data', check)
    child.once('exit', (code) => reject(new Error(`syncscope serve exited with ${code}:\n${output}`)))
  })
  const url = new URL(uiUrl)
  const token = url.searchParams.get('token') ?? ''
  const baseUrl = url.origin
  const app: RunningHeadlessApp = {
    baseUrl,
    uiUrl,
    token,
    dataDir,
    output: () => output,
    async call<T>(name: string, input: unknown = {}) {
      const response = await fetch(`${baseUrl}/rpc/${name}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-syncscope-token': token },
        body: JSON.stringify(input)
      })
      const body = (await response.json()) as { result?: T; error?: { message: string } }
      if (!response.ok) throw new Error(`${name}: ${response.status} ${body.error?.message ?? ''}`)
      return body.result as T
    }
  }
  return {
    app,
    async stop() {
      const exited = new Promise((done) => child.once('exit', done))
      child.kill('SIGTERM')
      await exited
      await removeDataDir(dataDir)
    }
  }
}

/**
 * Each worker gets its own `syncscope serve --ui` with a fresh data folder (and so a fresh embedded Postgres). Every
 * test runs in Chromium: where it is missing, the test fails (declared in SYNCSCOPE_REQUIRE) or is skipped.
 */
export const test = base.extend<
  { openApp: (page: Page, pageId?: string) => Promise<void>; chromiumFacility: void },
  AppOptions & { app: RunningHeadlessApp }
>({
  chromiumFacility: [
    // eslint-disable-next-line no-empty-pattern -- Playwright reads a fixture's dependencies from this pattern: none
    async ({}, use) => {
      needFacilities(['chromium'])
      await use()
    },
    { auto: true }
  ],
  appArgs: [[], { option: true, scope: 'worker' }],
  appEnv: [{}, { option: true, scope: 'worker' }],
  app: [
    async ({ appArgs, appEnv }, use) => {
      const { app, stop } = await startHeadlessApp(appArgs, appEnv)
      await use(app)
      await stop()
    },
    { scope: 'worker', timeout: 90_000 }
  ],
  openApp: async ({ app }, use) => {
    await use(async (page, pageId) => {
      await page.goto(app.uiUrl)
      if (pageId) await page.goto(`${app.baseUrl}/#/${pageId}`)
    })
  }
})

export { expect }
