import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type * as ElectricClient from '@electric-sql/client'
import { chromium, type Browser, type Page } from '@playwright/test'
import { chromiumArgs, chromiumPath } from './chromium'
import { needFacilities } from './facilities'
import { expect, test, type RunningHeadlessApp } from './fixtures'

/**
 * Real pages in Chromium against the shape API: a dev server on another loopback port reads it (with the official
 * client), a page of another site (evil.test, resolved to 127.0.0.1) can neither read it nor change anything.
 */
test.use({ appArgs: ['--header-brand', 'electric'] })

const CLIENT = readFileSync(
  join(__dirname, '..', 'node_modules', '@electric-sql', 'client', 'dist', 'index.browser.mjs')
)

let pages: Server
let pagePort: number
let browser: Browser

test.beforeAll(async () => {
  needFacilities(['chromium'])
  pages = createServer((req, res) => {
    if (req.url === '/client.mjs') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(CLIENT)
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>a page</title>')
  })
  await new Promise<void>((done) => pages.listen(0, '127.0.0.1', done))
  pagePort = (pages.address() as AddressInfo).port
  // the same Chromium, with evil.test resolving to this machine (as a rebinding or LAN attacker would arrange), and
  // without Chromium's own private-network checks: browsers without them (Firefox, Safari) rely on the server alone
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      ...chromiumArgs,
      '--host-resolver-rules=MAP evil.test 127.0.0.1',
      '--disable-features=PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests,LocalNetworkAccessChecks'
    ]
  })
})
test.afterAll(async () => {
  await browser?.close()
  await new Promise((done) => pages?.close(done))
})

async function touched(app: RunningHeadlessApp, table: string): Promise<boolean> {
  const result = await app.call<{ ok: boolean; results: Array<{ rows: string[][] }> }>('db.query', {
    sql: `SELECT c.relreplident = 'f' OR EXISTS (SELECT 1 FROM pg_publication_tables p WHERE p.tablename = c.relname) FROM pg_class c WHERE c.relname = '${table}' AND c.relnamespace = 'public'::regnamespace`
  })
  return result.results[0]?.rows[0]?.[0] === 't'
}

/** What a page's fetch got: a status, or the network error a refused CORS read turns into. */
function pageFetch(
  page: Page,
  url: string,
  init: RequestInit = {}
): Promise<{ status: number; body: string } | { error: string }> {
  return page.evaluate(
    async ([target, options]) => {
      try {
        const response = await fetch(target, options)
        return { status: response.status, body: response.type === 'opaque' ? '(opaque)' : await response.text() }
      } catch (error) {
        return { error: String(error) }
      }
    },
    [url, init] as const
  )
}

test('a dev server on another loopback port reads the shape API, with the official client', async ({ app }) => {
  const page = await browser.newPage()
  await page.goto(`http://localhost:${pagePort}/`)
  const plain = await pageFetch(page, `${app.baseUrl}/v1/shape?table=issues&offset=-1&where=id%3D1`)
  expect(plain).toMatchObject({ status: 200 })
  const rows = await page.evaluate(async (url) => {
    const { Shape, ShapeStream } = (await import('/client.mjs' as string)) as typeof ElectricClient
    const controller = new AbortController()
    const shape = new Shape(
      new ShapeStream({ url, params: { table: 'issues', where: 'priority = 1' }, signal: controller.signal })
    )
    const rows = await shape.rows
    controller.abort()
    return rows.length
  }, `${app.baseUrl}/v1/shape`)
  expect(rows).toBeGreaterThan(0)
  await page.close()
})

test('a page of another site can neither read the shape API nor drop, create or alter anything', async ({ app }) => {
  const page = await browser.newPage()
  await page.goto(`http://evil.test:${pagePort}/`)
  const shapeUrl = `${app.baseUrl}/v1/shape?table=comments&offset=-1`
  expect(await pageFetch(page, shapeUrl)).toMatchObject({ error: expect.stringContaining('Failed to fetch') })
  expect(await pageFetch(page, `${app.baseUrl}/v1/shape?table=issues&offset=-1`, { method: 'DELETE' })).toMatchObject({
    error: expect.stringContaining('Failed to fetch')
  })
  // requests a browser sends without asking (simple POST, no-cors GET, an image) reach the server, which must not act on them
  await pageFetch(page, shapeUrl, {
    method: 'POST',
    mode: 'no-cors',
    headers: { 'content-type': 'text/plain' },
    body: '{}'
  })
  await pageFetch(page, shapeUrl, { mode: 'no-cors' })
  await page.evaluate(
    (src) =>
      new Promise((done) => {
        const { document } = globalThis as unknown as {
          document: { createElement(tag: 'img'): { onload: unknown; onerror: unknown; src: string } }
        }
        const image = document.createElement('img')
        image.onload = image.onerror = done
        image.src = src
      }),
    `${shapeUrl}&img=1`
  )
  expect(await touched(app, 'comments')).toBe(false)
  await page.close()
})

test('a rebinding page (evil.test on the shape API port itself) gets nothing', async ({ app }) => {
  const port = new URL(app.baseUrl).port
  const page = await browser.newPage()
  // the attacker's page as first served by evil.test; its later same-origin requests reach the real server
  await page.route(`http://evil.test:${port}/`, (route) =>
    route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>rebinding</title>' })
  )
  await page.goto(`http://evil.test:${port}/`)
  const answer = await pageFetch(page, '/v1/shape?table=comments&offset=-1')
  expect(answer).toMatchObject({ status: 403 })
  expect(await touched(app, 'comments')).toBe(false)
  await page.close()
})
