/**
 * Issue 35, "The workbench at scale": the Shape workbench in real Chromium against `syncscope serve --ui`, a table of
 * ROWS rows (default 1,000,000). Chromium is launched by Playwright; the page is driven over the DevTools protocol in a
 * browser context of its own (bench/workbench-page.ts: a Playwright page would make Chromium keep a copy of every
 * response body). Measured with the page's own PerformanceObserver (long tasks, i.e. main-thread tasks over 50 ms) and
 * Chromium's memory from /proc (PSS of every process of the browser: browser, renderer with the workbench's worker,
 * GPU, utilities):
 *   1. rows shown within 10 s of Start (the row count reads ROWS and the first rows are drawn);
 *   2. no main-thread task over 50 ms while syncing, and while 1,000 row changes a second stream for 10 s;
 *   3. Chromium's memory growth for the rows ≤ 600 MiB;
 * and, beside the targets, the Log, SSE frames, Requests and Latency tabs opened and searched after the stream.
 *
 *   npm run build && npx tsx bench/workbench-scale.ts [--rows=1000000] [--live=long-poll|sse] [--profile] [--profile-worker]
 */
import { spawn } from 'node:child_process'
import { mkdtemp } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { chromium } from 'playwright-core'
import { allocatorReport, heapReport, startProfile, treePss } from './workbench-chromium'
import { BenchPage } from './workbench-page'
import { chromiumArgs, chromiumPath } from '../e2e/chromium'
import pg from 'pg'
import { endServe, ignoreConnectionErrors, removeDataDir, startTestPostgres } from '../test/support/postgres'
import { get, syncToEnd } from '../test/support/shape-http'

const ROOT = resolve(__dirname, '..')
const arg = (name: string, fallback: string) =>
  process.argv.find((each) => each.startsWith(`--${name}=`))?.split('=')[1] ?? fallback
const ROWS = Number(arg('rows', '1000000'))
const LIVE = arg('live', 'long-poll') as 'long-poll' | 'sse'
/**
 * `--profile`: CPU profiles of the page's main thread while syncing and while the changes stream (top functions), and
 * its memory 20 s after the sync: Chromium's memory-infra dump per allocator, the page's and the worker's JS heaps,
 * before and after a collection forced in the worker.
 */
const PROFILE = process.argv.includes('--profile')
/**
 * `--profile-worker`: a CPU profile of the workbench's worker while syncing. It attaches a DevTools session to the
 * worker from Start on, so that run's memory figures are not the page's alone.
 */
const PROFILE_WORKER = process.argv.includes('--profile-worker')
const CHANGES_PER_SECOND = 1_000
const STREAM_SECONDS = 10
const WRITES_PER_SECOND = 10
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))
const mib = (bytes: number) => bytes / 2 ** 20

interface App {
  baseUrl: string
  uiUrl: string
  /** Writes go to Postgres directly, as an application's would (the app's SQL console would tell the page). */
  pool: pg.Pool
  stop(): Promise<void>
}

/** `syncscope serve --ui` on a Postgres of the bench's own (an embedded one, started here). */
async function startServe(): Promise<App> {
  const postgres = await startTestPostgres()
  const pool = new pg.Pool({ connectionString: postgres.url, max: 2 })
  ignoreConnectionErrors(pool)
  const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-bench-workbench-'))
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/syncscope.js'),
      'serve',
      '--ui',
      '--port',
      '0',
      '--database',
      postgres.url,
      '--data-dir',
      dataDir,
      '--workspace',
      dataDir
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }
  )
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const uiUrl = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`syncscope serve did not start:\n${output}`)), 120_000)
    child.stdout.on('data', () => {
      const match = /Syncscope UI\s+(\S+)/.exec(output)
      if (match?.[1]) {
        clearTimeout(timer)
        done(match[1])
      }
    })
  })
  return {
    baseUrl: new URL(uiUrl).origin,
    uiUrl,
    pool,
    async stop() {
      await endServe(child)
      await pool.end()
      await removeDataDir(dataDir)
      await postgres.destroy()
    }
  }
}

interface LongTask {
  start: number
  duration: number
}

/** The page's long tasks (main thread, over 50 ms) that started within [from, to] (page clock). */
async function longTasks(page: BenchPage, from: number, to: number): Promise<LongTask[]> {
  const all = await page.evaluate<LongTask[]>('window.__longTasks')
  return all.filter((task) => task.start >= from && task.start <= to)
}

const pageNow = (page: BenchPage) => page.evaluate<number>('performance.now()')

async function loadTable(app: App): Promise<void> {
  await app.pool.query(`CREATE TABLE bench_rows (id bigint PRIMARY KEY, title text NOT NULL, status text NOT NULL,
      priority int NOT NULL, owner text, created_at timestamptz NOT NULL);
      CREATE TABLE bench_marker (id int PRIMARY KEY)`)
  const marker = await syncToEnd(app.baseUrl, { table: 'bench_marker' })
  await app.pool.query(
    `INSERT INTO bench_rows SELECT g, 'Row ' || g || ' ' || md5(g::text), (ARRAY['open','closed','waiting'])[g % 3 + 1],
      g % 5, 'user-' || (g % 1000), timestamptz '2026-01-01' + g * interval '1 second' FROM generate_series(1, ${ROWS}) g`
  )
  // the walsender decodes the load for seconds after its commit: wait until it passed it (a later change arrives)
  await app.pool.query('INSERT INTO bench_marker VALUES (1)')
  for (;;) {
    const live = await get(app.baseUrl, {
      table: 'bench_marker',
      offset: marker.offset,
      handle: marker.handle,
      live: 'true'
    })
    if (live.text.includes('"insert"')) return
  }
}

/** 1,000 row changes a second: UPDATEs of 100 rows every 100 ms, on a fixed clock. Returns when the last is written. */
async function streamChanges(app: App): Promise<{ written: number; lateMs: number }> {
  const perWrite = CHANGES_PER_SECOND / WRITES_PER_SECOND
  const start = performance.now()
  let written = 0
  let lateMs = 0
  for (let n = 0; n < STREAM_SECONDS * WRITES_PER_SECOND; n += 1) {
    const due = start + (n * 1000) / WRITES_PER_SECOND
    const wait = due - performance.now()
    if (wait > 0) await sleep(wait)
    else lateMs = Math.max(lateMs, -wait)
    const from = (n * perWrite) % ROWS
    await app.pool.query(
      `UPDATE bench_rows SET priority = priority + 1, status = 'changed ${n}' WHERE id > ${from} AND id <= ${from + perWrite}`
    )
    written += perWrite
  }
  return { written, lateMs }
}

interface Outcome {
  target: string
  measured: string
  goal: string
  met: boolean | null
}

function printTable(outcomes: Outcome[]): void {
  const lines = ['| target | measured | goal | |', '|---|---|---|---|']
  for (const outcome of outcomes)
    lines.push(
      `| ${outcome.target} | ${outcome.measured} | ${outcome.goal} | ${outcome.met === null ? 'info' : outcome.met ? 'met' : 'missed'} |`
    )
  console.log(lines.join('\n'))
}

const describeTasks = (tasks: LongTask[]) =>
  tasks.length === 0
    ? 'none over 50 ms'
    : `${tasks.length} over 50 ms, longest ${Math.max(...tasks.map((task) => task.duration)).toFixed(0)} ms, ${tasks
        .reduce((sum, task) => sum + task.duration, 0)
        .toFixed(0)} ms in all`

/** Opens the Log (and searches it), SSE frames, Requests and Latency tabs, timing each and the long tasks meanwhile. */
async function otherViews(page: BenchPage, outcomes: Outcome[]): Promise<void> {
  const viewsFrom = await pageNow(page)
  const timings: string[] = []
  const timed = async (name: string, action: () => Promise<void>) => {
    const started = performance.now()
    await action()
    timings.push(`${name} ${(performance.now() - started).toFixed(0)} ms`)
  }
  const shown = (selector: string) => page.waitFor(`document.querySelector(${JSON.stringify(selector)})`, 30_000)
  await timed('Log', async () => {
    await page.click('[role="tab"]', 'Log')
    await shown('[data-testid="log"] tr[data-op]')
  })
  await timed('Log search', async () => {
    await page.fill('search the log', 'changed 99')
    await page.waitFor(
      `document.querySelector('[data-testid="log-count"]')?.textContent.startsWith('100 shown')`,
      30_000
    )
  })
  if (LIVE === 'sse')
    await timed('SSE frames', async () => {
      await page.click('[role="tab"]', 'SSE frames')
      await shown('[data-testid="sse-frames"] tr[data-kind]')
    })
  await timed('Requests', async () => {
    await page.click('[role="tab"]', 'Requests & cache')
    await shown('[data-testid="requests"] tr[data-request]')
  })
  await timed('Latency', async () => {
    await page.click('[role="tab"]', 'Latency')
    await shown('[data-testid="latency-stats"]')
  })
  const viewTasks = await longTasks(page, viewsFrom, await pageNow(page))
  const latency = await page.evaluate<string>(`document.querySelector('[data-testid="latency-stats"]').innerText`)
  outcomes.push({
    target: 'Log, SSE frames, Requests, Latency opened and searched',
    measured: `${timings.join(', ')}; ${describeTasks(viewTasks)}`,
    goal: 'no task over 50 ms',
    met: viewTasks.length === 0
  })
  console.log(`latency while streaming:\n${latency}`)
}

async function main(): Promise<void> {
  console.log(
    `workbench-scale: ${ROWS.toLocaleString('en')} rows, live ${LIVE}; load average at start ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`
  )
  const app = await startServe()
  const server = await chromium.launchServer({ executablePath: chromiumPath, headless: true, args: chromiumArgs })
  const browserPid = server.process().pid as number
  const outcomes: Outcome[] = []
  try {
    const loadStarted = performance.now()
    await loadTable(app)
    console.log(`table loaded and decoded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`)
    const browser = await chromium.connect(server.wsEndpoint())
    // every main-thread task over 50 ms, from the page's start
    const page = await BenchPage.open(
      browser,
      { width: 1600, height: 1000 },
      `window.__longTasks = []
        new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) window.__longTasks.push({ start: entry.startTime, duration: entry.duration })
        }).observe({ type: 'longtask', buffered: true })`
    )
    await page.goto(app.uiUrl)
    await page.goto(`${app.baseUrl}/#/shapes`)
    await page.fill('table', 'bench_rows')
    await page.fill('live mode', LIVE)
    await sleep(2_000)
    const before = await treePss(browserPid)
    if (PROFILE) await allocatorReport(browser, 'before Start')

    // 1. Start → all rows shown
    const expected = `${ROWS} rows`
    const syncProfiler = PROFILE ? await startProfile(page.session, 'the main thread while syncing') : null
    // a string, not a function: tsx would wrap the function's inner functions in a helper the page does not have
    const t0 = (await page.evaluate(`(() => {
      const check = () => {
        const count = document.querySelector('[data-testid="row-count"]')?.textContent
        if (count === ${JSON.stringify(expected)} && document.querySelector('[role="table"] [data-key]') && window.__shownAt === undefined)
          window.__shownAt = performance.now()
      }
      new MutationObserver(check).observe(document.body, { subtree: true, childList: true, characterData: true })
      const start = [...document.querySelectorAll('button')].find((button) => button.textContent === 'Start')
      const at = performance.now()
      start.click()
      return at
    })()`)) as number
    const workerProfiler = PROFILE_WORKER
      ? await startProfile(await page.session.worker(), 'the worker while syncing')
      : null
    let shownAt: number | undefined
    const deadline = performance.now() + 120_000
    let peak = before.total
    while (shownAt === undefined && performance.now() < deadline) {
      await sleep(250)
      shownAt = await page.evaluate<number | undefined>('window.__shownAt')
      peak = Math.max(peak, (await treePss(browserPid)).total)
    }
    if (shownAt === undefined) throw new Error(`the row count never read ${expected}`)
    const shownMs = shownAt - t0
    await page.waitFor(`document.querySelector('[data-testid="phase"]')?.textContent.includes('live')`, 60_000)
    const synced = await pageNow(page)
    if (syncProfiler) await syncProfiler()
    if (workerProfiler) await workerProfiler()
    const settled: Array<{ after: number; total: number; renderer: number }> = []
    for (const seconds of [3, 10, 20]) {
      await sleep((seconds - (settled.at(-1)?.after ?? 0)) * 1000)
      const pss = await treePss(browserPid)
      peak = Math.max(peak, pss.total)
      settled.push({ after: seconds, total: pss.total, renderer: pss.byType.renderer ?? 0 })
    }
    if (PROFILE) {
      await allocatorReport(browser, '20 s after the sync')
      await heapReport(page, async () => (await treePss(browserPid)).total)
      await allocatorReport(browser, 'after a collection in the worker')
    }
    const syncTasks = await longTasks(page, t0, synced)
    if (PROFILE)
      console.log(
        `long tasks while syncing (ms after Start): ${syncTasks.map((task) => `${(task.start - t0).toFixed(0)}+${task.duration.toFixed(0)}`).join(', ')}`
      )
    const after = settled.at(-1) as (typeof settled)[number]
    const growth = after.total - before.total
    outcomes.push(
      {
        target: `${ROWS.toLocaleString('en')} rows shown after Start`,
        measured: `${(shownMs / 1000).toFixed(2)} s`,
        goal: '≤ 10 s',
        met: shownMs <= 10_000
      },
      {
        target: 'main-thread tasks while syncing',
        measured: describeTasks(syncTasks),
        goal: 'none over 50 ms',
        met: syncTasks.length === 0
      },
      {
        target: 'Chromium memory growth for the rows (PSS of all its processes, 20 s after the sync)',
        measured: `${mib(growth).toFixed(0)} MiB (${mib(before.total).toFixed(0)} → ${mib(after.total).toFixed(0)}; renderer +${mib(after.renderer - (before.byType.renderer ?? 0)).toFixed(0)} MiB)`,
        goal: '≤ 600 MiB',
        met: mib(growth) <= 600
      },
      {
        target: 'the same, while syncing and settling',
        measured: `peak +${mib(peak - before.total).toFixed(0)} MiB; ${settled.map((each) => `+${mib(each.total - before.total).toFixed(0)} MiB at ${each.after} s`).join(', ')}`,
        goal: '',
        met: null
      }
    )

    // 2. 1,000 row changes a second for 10 s
    const streamFrom = await pageNow(page)
    const profiler = PROFILE ? await startProfile(page.session, 'the main thread while streaming') : null
    const stream = await streamChanges(app)
    if (profiler) await profiler()
    const wroteAt = performance.now()
    const updates = `${stream.written} updates`
    await page.waitFor(
      `document.querySelector('[data-testid="change-counts"]')?.textContent.includes(' ${stream.written} updates')`,
      60_000
    )
    const caughtUpMs = performance.now() - wroteAt
    const streamTasks = await longTasks(page, streamFrom, await pageNow(page))
    if (PROFILE)
      console.log(
        `long tasks while streaming (ms after the stream started): ${streamTasks.map((task) => `${(task.start - streamFrom).toFixed(0)}+${task.duration.toFixed(0)}`).join(', ')}`
      )
    outcomes.push(
      {
        target: `main-thread tasks while ${CHANGES_PER_SECOND.toLocaleString('en')} changes/s stream for ${STREAM_SECONDS} s`,
        measured: describeTasks(streamTasks),
        goal: 'none over 50 ms',
        met: streamTasks.length === 0
      },
      {
        target: 'the rows keep up with the stream',
        measured: `all ${updates} applied ${(caughtUpMs / 1000).toFixed(2)} s after the last write (writer at most ${stream.lateMs.toFixed(0)} ms late)`,
        goal: 'keeps up',
        met: null
      }
    )

    // 3. the other views, opened and searched after the stream
    await otherViews(page, outcomes).catch((error: unknown) =>
      outcomes.push({
        target: 'Log, SSE frames, Requests, Latency opened and searched',
        measured: `could not: ${(error as Error).message.split('\n')[0]}`,
        goal: 'no task over 50 ms',
        met: false
      })
    )
    await page.screenshot(join(tmpdir(), 'workbench-scale.png'))
    await page.close()
    await browser.close()
  } finally {
    await server.close()
    await app.stop()
  }
  console.log(
    `load average at the end ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`
  )
  printTable(outcomes)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
