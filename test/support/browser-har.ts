import { readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { chromiumArgs, chromiumPath } from '../../e2e/chromium'

const CLIENT = readFileSync(
  join(__dirname, '..', '..', 'node_modules', '@electric-sql', 'client', 'dist', 'index.browser.mjs')
)

/** A developer's page: `@electric-sql/client` following `?shape=URL` (SSE with `&sse=1`), counting what it hears. */
const PAGE = `<!doctype html><title>an app</title><script type="module">
import { ShapeStream } from '/client.mjs'
const query = new URLSearchParams(location.search)
window.state = { upToDate: 0, refetches: 0, changes: 0, errors: [] }
const stream = new ShapeStream({ url: query.get('shape'), params: { table: 'issues' }, liveSse: query.get('sse') === '1', onError: (error) => { state.errors.push(String(error)) } })
stream.subscribe((messages) => {
  for (const message of messages) {
    if (message.headers.control === 'up-to-date') state.upToDate++
    else if (message.headers.control === 'must-refetch') state.refetches++
    else if ('key' in message) state.changes++
  }
}, (error) => state.errors.push(String(error)))
window.stream = stream
</script>`

export interface AppState {
  upToDate: number
  refetches: number
  changes: number
  errors: string[]
}

/** A shape request the page made that was answered in full: its URL, status, headers and how long it took. */
export interface FinishedShapeRequest {
  url: URL
  status: number
  headers: Record<string, string>
  ms: number
}

/** The shape requests of a recorded page, as they finish. */
export class ShapeTraffic {
  readonly finished: FinishedShapeRequest[] = []

  constructor(page: Page) {
    page.on('requestfinished', (request) => {
      if (!request.url().includes('/v1/shape')) return
      // a request that finishes as the recording ends has no headers to give any more
      void request
        .response()
        .catch(() => null)
        .then(async (response) => {
          if (!response) return
          const ms = request.timing().responseEnd
          const headers = await response.allHeaders().catch(() => null)
          if (!headers) return
          this.finished.push({
            url: new URL(request.url()),
            status: response.status(),
            headers,
            ms
          })
        })
    })
  }

  /** Waits until the finished requests satisfy `done`, or fails after `ms` saying what was awaited and what came. */
  async until(what: string, done: (finished: FinishedShapeRequest[]) => boolean, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms
    while (!done(this.finished)) {
      if (Date.now() > deadline)
        throw new Error(
          `no ${what} in ${ms} ms: ${this.finished.map((request) => `${request.status} ${request.url.search}`).join(', ')}`
        )
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

export const isLive = (request: FinishedShapeRequest): boolean => request.url.searchParams.get('live') === 'true'

export interface BrowserHarRecorder {
  /** Opens the page on `shapeUrl` in a fresh context recording a HAR, runs `drive`, closes the context and returns the HAR text. */
  record(
    shapeUrl: string,
    drive: (page: Page, traffic: ShapeTraffic) => Promise<void>,
    options?: { sse?: boolean }
  ): Promise<string>
  close(): Promise<void>
}

export const appState = (page: Page): Promise<AppState> =>
  page.evaluate(() => (globalThis as unknown as { state: AppState }).state)

/** Waits until the page's client state satisfies `done` (polling), or fails after `ms` with the last state. */
export async function waitForState(page: Page, done: (state: AppState) => boolean, ms = 15_000): Promise<AppState> {
  const deadline = Date.now() + ms
  for (;;) {
    const state = await appState(page)
    if (done(state)) return state
    if (Date.now() > deadline) throw new Error(`the page did not get there in ${ms} ms: ${JSON.stringify(state)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Chromium (Playwright's `recordHar`) driving `@electric-sql/client` from a page on its own loopback origin. */
export async function startBrowserHarRecorder(): Promise<BrowserHarRecorder> {
  const pages: Server = createServer((req, res) => {
    if (req.url === '/client.mjs') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(CLIENT)
    res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE)
  })
  await new Promise<void>((done) => pages.listen(0, '127.0.0.1', done))
  const pageUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}/`
  const browser: Browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs })
  const dir = await mkdtemp(join(tmpdir(), 'syncscope-har-'))
  let count = 0
  return {
    async record(shapeUrl, drive, options = {}) {
      const path = join(dir, `${++count}.har`)
      const context = await browser.newContext({ recordHar: { path, content: 'embed' } })
      try {
        const page = await context.newPage()
        const traffic = new ShapeTraffic(page)
        await page.goto(`${pageUrl}?shape=${encodeURIComponent(shapeUrl)}${options.sse ? '&sse=1' : ''}`)
        await drive(page, traffic)
        await page.evaluate(() =>
          (globalThis as unknown as { stream: { unsubscribeAll(): void } }).stream.unsubscribeAll()
        )
      } finally {
        await context.close()
      }
      return readFile(path, 'utf8')
    },
    async close() {
      await browser.close()
      await new Promise((resolve) => pages.close(resolve))
      await rm(dir, { recursive: true, force: true })
    }
  }
}
