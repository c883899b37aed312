/**
 * The shape server's performance targets (issue 3), each measured against a real embedded Postgres:
 *   1. initial sync of a 1M-row shape, against COPY (SELECT …) TO STDOUT of the same table in the same run;
 *   2. commit → client latency with 10,000 `col = const` shapes on one table;
 *   3. 1,000 long-poll clients on one shape receiving one change;
 *   4. memory per idle shape;
 *   5. 10,000 SSE streams on one shape receiving one change (bench/sse-fan-out.ts);
 *   6. one 3,000-row transaction into 2,000 shapes whose where is not indexable (bench/unindexed-routing.ts);
 *   7. 100 slow readers of one 10 MiB chunk (bench/slow-readers.ts);
 *   8. commit → client latency with 1,000 subquery shapes `… IN (SELECT id FROM projects WHERE owner_id = const)`
 *      (bench/subquery-routing.ts).
 * Run: node --expose-gc --import tsx bench/shape-server.ts [rows=1000000] [shapes=10000] [clients=1000] [--only=1,3]
 * (5, 7 and 8 run only when named in --only.) The clients of targets 3, 5 and 6 are C programs built with the machine's
 * `cc` where there is one (see benchClient); BENCH_CLIENTS=node runs their Node twins instead.
 */
import { to as copyTo } from 'pg-copy-streams'
import { startTestShapeServer, type TestShapeServer } from '../test/support/shape-server'
import { get, shapeUrl, syncToEnd } from '../test/support/shape-http'
import {
  type ClientProcess,
  type ClientProgram,
  clientProcess,
  benchClient,
  nodeClient,
  startClientLauncher,
  stopClientLauncher
} from './client-process'
import { slowReaders } from './slow-readers'
import { sseFanOut } from './sse-fan-out'
import { subqueryRouting } from './subquery-routing'
import { unindexedRouting } from './unindexed-routing'

const args = process.argv.slice(2)
const only = args
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',')
  .map(Number) ?? [1, 2, 3, 4, 6]
const [ROWS = 1_000_000, SHAPES = 10_000, CLIENTS = 1_000] = args.filter((arg) => !arg.startsWith('--')).map(Number)

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
}
const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6
const report = (line: string) => process.stdout.write(`${line}\n`)

/**
 * Rounds of target 1: each measures COPY and then the sync, back to back, so both see the same machine; one more round
 * before them warms up Postgres (its first read of the freshly loaded table), the JIT and the server, and is not counted.
 * The sync client runs every round in one process, as COPY's reader does in this one: a client process started afresh
 * for each sync spends two to three times the CPU (its JIT cold, each body buffer fresh memory); it is reported beside.
 */
const SYNC_ROUNDS = 5

async function initialSync(server: TestShapeServer): Promise<void> {
  await server.pool.query(
    'CREATE TABLE big (id bigint PRIMARY KEY, owner int NOT NULL, title text, amount numeric(12,2), done boolean, created timestamptz)'
  )
  await server.pool.query(
    `INSERT INTO big SELECT g, g % 1000, 'row ' || g || ' of the benchmark', (g % 10000) / 7.0, g % 3 = 0, timestamptz '2025-01-01' + g * interval '1 second' FROM generate_series(1, ${ROWS}) g`
  )
  await server.pool.query('VACUUM ANALYZE big')
  await walsenderCaughtUp(server)
  const url = shapeUrl(server.url, { table: 'big' })
  const client = clientProcess('initial-sync-client.mjs', [url])
  await client.ready
  const rounds: Array<{ copy: number; sync: number; ratio: number }> = []
  let last = { rows: 0, requests: 0, bytes: 0, ms: 0, rate: 0 }
  await copyRate(server)
  await syncOnce(url, client, 'count')
  for (let round = 0; round < SYNC_ROUNDS; round++) {
    const copy = await copyRate(server)
    last = await syncOnce(url, client, 'count')
    rounds.push({ copy, sync: last.rate, ratio: last.rate / copy })
    if (process.env.BENCH_VERBOSE)
      process.stderr.write(
        `round ${round}: COPY ${rate(copy)} sync ${rate(last.rate)} ratio ${(last.rate / copy).toFixed(2)}\n`
      )
  }
  const parsed = await syncOnce(url, client, 'parse')
  client.send('stop\n')
  const coldCopy = await copyRate(server)
  const fresh = clientProcess('initial-sync-client.mjs', [url])
  await fresh.ready
  const cold = await syncOnce(url, fresh, 'count')
  fresh.send('stop\n')
  const median = (values: number[]) => percentile(values, 50)
  const range = (values: number[], format: (value: number) => string) =>
    `${format(Math.min(...values))}–${format(Math.max(...values))}`
  const ratios = rounds.map((r) => r.ratio)
  const syncs = rounds.map((r) => r.sync)
  const copies = rounds.map((r) => r.copy)
  const detail = `${SYNC_ROUNDS} rounds of COPY then sync, after one warm-up round: sync ${range(syncs, rate)} rows/s, COPY ${range(copies, rate)} rows/s, ratio ${range(ratios, (v) => v.toFixed(2))}; a client that JSON.parses every body: ${rate(parsed.rate)} rows/s; a client process started afresh for its one sync: ${rate(cold.rate)} rows/s, ${(cold.rate / coldCopy).toFixed(2)}× the COPY before it`
  report(
    `| 1. initial sync of ${last.rows.toLocaleString('en')} rows (${last.requests} requests of ${(last.bytes / last.requests / 2 ** 20).toFixed(1)} MiB, client in another process) | median ${rate(median(syncs))} rows/s, **${median(ratios).toFixed(2)}× COPY** | ${detail} | ≥ 200,000 rows/s and ≥ 0.5× COPY |`
  )
}

/**
 * Waits until the server's walsender has decoded the load: it spends seconds of a core on a million-row transaction
 * (even one no shape wants), and the rounds would measure COPY and the sync beside it. A logical message after the
 * load moves the walsender's sent position past the load's commit once it is decoded.
 */
async function walsenderCaughtUp(server: TestShapeServer): Promise<void> {
  const { rows } = await server.pool.query<{ lsn: string }>(
    "SELECT pg_logical_emit_message(false, 'bench', 'loaded')::text AS lsn"
  )
  const lsn = rows[0]?.lsn
  for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
    const sent = await server.pool.query('SELECT 1 FROM pg_stat_replication WHERE sent_lsn >= $1::pg_lsn', [lsn])
    if (sent.rowCount) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error('the walsender did not decode the load within 2 minutes')
}

/** `COPY (SELECT * FROM big) TO STDOUT` read by this process, lines counted: rows per second. */
async function copyRate(server: TestShapeServer): Promise<number> {
  const client = await server.pool.connect()
  try {
    const start = process.hrtime.bigint()
    let copied = 0
    for await (const chunk of client.query(copyTo('COPY (SELECT * FROM big) TO STDOUT')) as AsyncIterable<Buffer>) {
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) copied += 1
    }
    return copied / (ms(start) / 1000)
  } finally {
    client.release()
  }
}

const rate = (value: number): string => Math.round(value).toLocaleString('en')

/** One initial sync of `big` from a fresh shape (the previous one is deleted), by the client, which counts or parses. */
async function syncOnce(
  url: string,
  client: ClientProcess,
  mode: 'count' | 'parse'
): Promise<{ rows: number; requests: number; bytes: number; ms: number; rate: number }> {
  await fetch(url, { method: 'DELETE' })
  client.send(`${mode}\n`)
  const result = (await client.nextLine()) as { rows: number; requests: number; bytes: number; ms: number }
  if (result.rows !== ROWS) throw new Error(`the ${mode} client saw ${result.rows} rows, not ${ROWS}`)
  return { ...result, rate: result.rows / (result.ms / 1000) }
}

async function createShapes(
  server: TestShapeServer
): Promise<Array<{ owner: number; handle: string; offset: string }>> {
  await server.pool.query('CREATE TABLE items (id serial PRIMARY KEY, owner int NOT NULL, val int NOT NULL DEFAULT 0)')
  await server.pool.query(`INSERT INTO items (owner) SELECT g FROM generate_series(0, ${SHAPES - 1}) g`)
  await server.pool.query('CREATE INDEX items_owner ON items (owner)')
  const shapes: Array<{ owner: number; handle: string; offset: string }> = []
  const batch = 50
  for (let first = 0; first < SHAPES; first += batch) {
    const created = await Promise.all(
      Array.from({ length: Math.min(batch, SHAPES - first) }, async (_, i) => {
        const owner = first + i
        const synced = await syncToEnd(server.url, { table: 'items', where: `owner = ${owner}` })
        return { owner, handle: synced.handle, offset: synced.offset }
      })
    )
    shapes.push(...created)
  }
  return shapes
}

function heapUsed(): number {
  globalThis.gc?.()
  globalThis.gc?.()
  return process.memoryUsage().heapUsed
}

async function commitLatency(
  server: TestShapeServer,
  shapes: Array<{ owner: number; handle: string; offset: string }>
): Promise<void> {
  const latencies: number[] = []
  for (let i = 0; i < 300; i++) {
    const shape = shapes[(i * 7919) % shapes.length]!
    const params = {
      table: 'items',
      where: `owner = ${shape.owner}`,
      handle: shape.handle,
      offset: shape.offset,
      live: 'true'
    }
    const waiting = get(server.url, params)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const start = process.hrtime.bigint()
    await server.pool.query('UPDATE items SET val = val + 1 WHERE owner = $1', [shape.owner])
    const response = await waiting
    latencies.push(ms(start))
    shape.offset = response.header('@offset') ?? shape.offset
  }
  report(
    `| 2. commit → client, ${shapes.length.toLocaleString('en')} shapes \`owner = const\` on one table (300 commits) | p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms | max ${Math.max(...latencies).toFixed(1)} ms | p99 ≤ 15 ms |`
  )
}

/** Long-poll clients in a child process (so their socket work does not share the server's event loop). */
function longPolls(
  program: ClientProgram,
  target: string,
  count: number
): { answers: Promise<Array<{ status: number; at: number }>>; ready: Promise<void> } {
  const child = program.start([target, String(count)])
  const answers = child.lines.then((lines) =>
    (lines as Array<{ status: number; at: number; ready?: boolean }>).filter((line) => !line.ready)
  )
  return { answers, ready: child.ready }
}

/** One round of target 3: the clients wait on the shape's end, one UPDATE; commit → each answer, in ms. */
async function fanOutRound(
  server: TestShapeServer,
  table: string,
  synced: { handle: string; offset: string },
  clients: ClientProgram
): Promise<number[]> {
  const url = shapeUrl(server.url, { table, handle: synced.handle, offset: synced.offset, live: 'true' })
  const polls = longPolls(clients, url, CLIENTS)
  await polls.ready
  await new Promise((resolve) => setTimeout(resolve, 2000))
  const start = performance.timeOrigin + performance.now()
  await server.pool.query(`UPDATE ${table} SET val = val + 1`)
  const answers = await polls.answers
  if (answers.some((answer) => answer.status !== 200))
    throw new Error(`non-200 answers: ${JSON.stringify(answers.filter((a) => a.status !== 200).slice(0, 3))}`)
  synced.offset =
    (await get(server.url, { table, handle: synced.handle, offset: synced.offset })).header('@offset') ?? synced.offset
  return answers.map((answer) => answer.at - start)
}

/**
 * Target 3; `condition` says what else the server holds (its other shapes stay in memory and in the GC's way). The
 * rounds use `clients` (bench/long-poll-clients.c where there is a compiler); one more round with the Node client is
 * reported beside them, as the cost a client of Node's adds on these two cores.
 */
async function fanOut(
  server: TestShapeServer,
  table: string,
  condition: string,
  clients: ClientProgram
): Promise<void> {
  await server.pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, val int)`)
  await server.pool.query(`INSERT INTO ${table} VALUES (1, 0)`)
  const synced = await syncToEnd(server.url, { table })
  const summary = (values: number[]) =>
    `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms`
  const latencies: number[] = []
  for (let round = 0; round < 3; round++) {
    const round_ = await fanOutRound(server, table, synced, clients)
    latencies.push(...round_)
    if (process.env.BENCH_VERBOSE)
      process.stderr.write(`round ${round}: ${summary(round_)}, first ${Math.min(...round_).toFixed(1)} ms\n`)
  }
  const node = nodeClient('long-poll-clients')
  const nodeRound =
    node.name === clients.name
      ? ''
      : `; one round with ${node.name}: ${summary(await fanOutRound(server, table, synced, node))}`
  report(
    `| 3. ${CLIENTS.toLocaleString('en')} long-poll clients on one shape, one change (3 rounds, clients in another process, ${clients.name}), ${condition} | p50 ${percentile(latencies, 50).toFixed(1)} ms, **p99 ${percentile(latencies, 99).toFixed(1)} ms** | ${latencies.length} answers${nodeRound} | p99 ≤ 100 ms |`
  )
}

async function main(): Promise<void> {
  startClientLauncher()
  const clients = await benchClient('long-poll-clients')
  const server = await startTestShapeServer({ longPollTimeout: 20_000 })
  try {
    report(
      `machine: ${(await import('node:os')).cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`
    )
    report('| target | measured | detail | goal |')
    report('|---|---|---|---|')
    if (only.includes(1)) await initialSync(server)
    if (only.includes(6))
      await unindexedRouting({
        server,
        report,
        clients: (target, count) => longPolls(clients, target, count),
        clientName: clients.name
      })
    if (only.includes(3)) await fanOut(server, 'fan', 'before the 10,000 shapes of targets 2 and 4 exist', clients)
    if (only.includes(2) || only.includes(4)) {
      const before = heapUsed()
      const shapes = await createShapes(server)
      const perShape = (heapUsed() - before) / shapes.length
      report(
        `| 4. memory per idle shape (${shapes.length.toLocaleString('en')} shapes, heap after GC) | ${(perShape / 1024).toFixed(1)} kB | ${server.app.rooms.shapes.service()?.shapeCount} shapes registered | ≤ 15 kB |`
      )
      if (only.includes(2)) await commitLatency(server, shapes)
    }
    if (only.includes(3) && (only.includes(2) || only.includes(4)))
      await fanOut(server, 'fan_crowded', 'with the 10,000 shapes of targets 2 and 4 also in memory', clients)
    if (only.includes(5)) await sseFanOut(report, Number(process.env.SSE_CLIENTS ?? 10_000))
    if (only.includes(7)) await slowReaders(report)
    if (only.includes(8)) await subqueryRouting(server, report)
  } finally {
    await server.close()
    stopClientLauncher()
  }
}

void main()
