/**
 * Target 5 (issue 12 (a)): 10,000 SSE streams on one shape, one change. Delivery (commit → each stream's up-to-date),
 * keep-alives on time (the gap before each keep-alive comment), and the server's memory per open stream. The streams
 * are opened by bench/sse-clients.c (or .mjs, see benchClient) in another process over raw sockets; the server has its
 * own embedded Postgres and the default keep-alive (21 s), so the measurement also spans a round of keep-alives.
 */
import { startTestShapeServer } from '../test/support/shape-server'
import { shapeUrl, syncToEnd } from '../test/support/shape-http'
import { type ClientProcess, benchClient } from './client-process'

const KEEP_ALIVE_MS = 21_000

type Report = (line: string) => void

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Server memory after full collections: resident set, and V8 heap plus memory outside it (buffers, native). */
function memory(): { rss: number; heapAndExternal: number } {
  globalThis.gc?.()
  globalThis.gc?.()
  const usage = process.memoryUsage()
  return { rss: usage.rss, heapAndExternal: usage.heapUsed + usage.external }
}

interface ClientsResult {
  delivered: Array<number | null>
  keepAliveGaps: number[]
  ended: number
}

function streamsOf(child: ClientProcess) {
  return {
    ready: child.ready,
    stop: () => child.send('stop\n'),
    result: child.lines.then((lines) => lines.at(-1) as ClientsResult)
  }
}

export async function sseFanOut(report: Report, clients: number): Promise<void> {
  const server = await startTestShapeServer({ longPollTimeout: 20_000, sseKeepAlive: KEEP_ALIVE_MS })
  try {
    await server.pool.query('CREATE TABLE sse_fan (id int PRIMARY KEY, val int)')
    await server.pool.query('INSERT INTO sse_fan VALUES (1, 0)')
    const synced = await syncToEnd(server.url, { table: 'sse_fan' })
    const url = shapeUrl(server.url, {
      table: 'sse_fan',
      handle: synced.handle,
      offset: synced.offset,
      live: 'true',
      live_sse: 'true'
    })
    const client = await benchClient('sse-clients')
    const before = memory()
    const opening = Date.now()
    const streams = streamsOf(client.start([url, String(clients)]))
    await streams.ready
    const openedMs = Date.now() - opening
    await sleep(1_000)
    const start = performance.timeOrigin + performance.now()
    await server.pool.query('UPDATE sse_fan SET val = val + 1')
    // past the next keep-alive of every stream (the first ones opened are the first to need one)
    await sleep(KEEP_ALIVE_MS + 3_000)
    // measured after the change, not before it: the full collections shrink the heap, and the change was then the
    // first to touch its pages again (2–3 ms a step on this VM, where a page fault costs ~15 µs)
    const open = memory()
    streams.stop()
    const { delivered, keepAliveGaps, ended } = await streams.result
    const latencies = delivered.filter((at): at is number => at !== null).map((at) => at - start)
    const late = keepAliveGaps.map((gap) => gap - KEEP_ALIVE_MS)
    const perStream = (bytes: number) => `${(bytes / clients / 1024).toFixed(1)} KiB`
    report(
      `| 5. ${clients.toLocaleString('en')} SSE streams on one shape, one change (clients in another process, ${client.name}) | p50 ${percentile(latencies, 50).toFixed(1)} ms, **p99 ${percentile(latencies, 99).toFixed(1)} ms**; ` +
        `server memory per open stream: RSS ${perStream(open.rss - before.rss)}, heap + external ${perStream(open.heapAndExternal - before.heapAndExternal)} | ` +
        `${latencies.length} of ${clients} delivered (first ${Math.min(...latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms); ${keepAliveGaps.length} keep-alives, ` +
        `late by p50 ${percentile(late, 50).toFixed(0)} ms, p99 ${percentile(late, 99).toFixed(0)} ms, max ${Math.max(...late).toFixed(0)} ms; ${ended} streams ended early; opening them took ${openedMs} ms | p99 ≤ 150 ms, keep-alives on time, ≤ 16 KiB per stream |`
    )
  } finally {
    await server.close()
  }
}
