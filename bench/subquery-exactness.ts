/**
 * Target 8c (issue 30): 1,000 subquery shapes stay exact under 200 writes a second for a minute. One server and its
 * embedded Postgres; 1,000 shapes on `sx_tasks` (850 `project_id IN (SELECT id FROM sx_projects WHERE owner_id = k)`,
 * 50 nested through `sx_orgs`, 50 OR of two subqueries, 50 NOT IN with a plain condition), all created and synced
 * first; then random transactions at a fixed rate (tasks inserted, edited, moved between projects and deleted,
 * projects changing owner and org, orgs turning active, several at once), while 20 of the shapes are followed live and
 * a probe every 250 ms times commit → client on one of them. At the end, once the server has acknowledged the last
 * write (nothing held), every shape is read from the start (snapshot and log, materialised by the reference's tag
 * rules) and compared with the same SELECT: every one must be equal, with no change that did not fit.
 *
 * Run: node --import tsx bench/subquery-exactness.ts [--seconds=60] [--rate=200] [--shapes=1000]
 */
import pg from 'pg'
import { startTestShapeServer, type TestShapeServer } from '../test/support/shape-server'
import { TagClient } from '../test/support/subquery-client'
import { seededRandom } from '../test/support/subquery-workload'
import { percentile } from './subquery-routing'

const option = (name: string, fallback: number): number =>
  Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback)
const SECONDS = option('seconds', 60)
const RATE = option('rate', 200)
const SHAPES = option('shapes', 1000)
const OWNERS = 850
const PROJECTS = 2000
const ORGS = 40
const TASKS = 20_000
const FOLLOWED = 20
const PROBE_MS = 250
const SEED = option('seed', 30)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const report = (line: string) => process.stdout.write(`${line}\n`)

/** The i-th shape's where, as the shape has it and as Postgres checks it. */
function whereOf(i: number): string {
  const kind = Math.floor((i * 20) / SHAPES)
  if (kind < 17) return `project_id IN (SELECT id FROM sx_projects WHERE owner_id = ${i % OWNERS})`
  if (kind === 17)
    return `project_id IN (SELECT id FROM sx_projects WHERE org_id IN (SELECT id FROM sx_orgs WHERE active AND region = ${i % 10}))`
  if (kind === 18)
    return `project_id IN (SELECT id FROM sx_projects WHERE owner_id = ${i % OWNERS}) OR project_id IN (SELECT id FROM sx_projects WHERE org_id = ${i % ORGS})`
  return `project_id NOT IN (SELECT id FROM sx_projects WHERE owner_id = ${i % OWNERS}) AND bucket = ${i % 50}`
}

async function createTables(pool: pg.Pool): Promise<void> {
  await pool.query('CREATE TABLE sx_orgs (id int PRIMARY KEY, active boolean NOT NULL, region int NOT NULL)')
  await pool.query('CREATE TABLE sx_projects (id int PRIMARY KEY, owner_id int NOT NULL, org_id int NOT NULL)')
  await pool.query(
    'CREATE TABLE sx_tasks (id int PRIMARY KEY, project_id int NOT NULL, bucket int NOT NULL, val int NOT NULL, note text)'
  )
  await pool.query(`INSERT INTO sx_orgs SELECT g, g % 3 <> 0, g % 10 FROM generate_series(0, ${ORGS - 1}) g`)
  await pool.query(
    `INSERT INTO sx_projects SELECT g, g % ${OWNERS}, g % ${ORGS} FROM generate_series(0, ${PROJECTS - 1}) g`
  )
  await pool.query(
    `INSERT INTO sx_tasks SELECT g, (g * 7) % ${PROJECTS}, g % 50, 0, 'n' || g FROM generate_series(0, ${TASKS - 1}) g`
  )
  await pool.query('CREATE INDEX sx_tasks_project ON sx_tasks (project_id)')
}

/** One random transaction's statements. */
function transaction(random: (n: number) => number, next: () => number): string[] {
  const task = () => random(TASKS + 2000)
  const project = () => random(PROJECTS)
  const one = (): string => {
    switch (random(10)) {
      case 0:
      case 1:
        return `UPDATE sx_tasks SET project_id = ${project()} WHERE id = ${task()}`
      case 2:
      case 3:
        return `UPDATE sx_tasks SET val = val + 1, note = 'e${random(1000)}' WHERE id = ${task()}`
      case 4:
        return `INSERT INTO sx_tasks VALUES (${next()}, ${project()}, ${random(50)}, 0, 'new')`
      case 5:
        return `DELETE FROM sx_tasks WHERE id = ${task()}`
      case 6:
      case 7:
        return `UPDATE sx_projects SET owner_id = ${random(OWNERS)} WHERE id = ${project()}`
      case 8:
        return `UPDATE sx_projects SET org_id = ${random(ORGS)} WHERE id = ${project()}`
      default:
        return `UPDATE sx_orgs SET active = NOT active WHERE id = ${random(ORGS)}`
    }
  }
  return Array.from({ length: random(4) === 0 ? 2 + random(3) : 1 }, one)
}

/** Transactions at `RATE` a second for `SECONDS`, on a pool of connections; returns how many committed. */
async function write(pool: pg.Pool): Promise<{ committed: number; failed: number; late: number }> {
  const random = seededRandom(SEED)
  let id = 10_000_000
  const next = () => id++
  const result = { committed: 0, failed: 0, late: 0 }
  const started = Date.now()
  const inFlight = new Set<Promise<void>>()
  for (let n = 0; n < SECONDS * RATE; n++) {
    const due = started + (n * 1000) / RATE
    if (due > Date.now()) await sleep(due - Date.now())
    else if (Date.now() - due > 1000) result.late += 1
    const statements = transaction(random, next)
    const run = (async () => {
      const client = await pool.connect()
      try {
        await client.query(`BEGIN; ${statements.join('; ')}; COMMIT`)
        result.committed += 1
      } catch {
        await client.query('ROLLBACK').catch(() => undefined)
        result.failed += 1
      } finally {
        client.release()
      }
    })()
    inFlight.add(run)
    void run.finally(() => inFlight.delete(run))
    if (inFlight.size >= 16) await Promise.race(inFlight)
  }
  await Promise.all(inFlight)
  return result
}

/** Live followers of some shapes, and a probe timing commit → client on them while the writes run. */
function followAndProbe(server: TestShapeServer, clients: TagClient[]): { latencies: number[]; stop(): Promise<void> } {
  let stopped = false
  const latencies: number[] = []
  const following = clients.map(async (client) => {
    while (!stopped) await client.sync().catch(() => sleep(100))
  })
  const probing = (async () => {
    for (let n = 0; !stopped; n++) {
      const client = clients[n % clients.length] as TagClient
      const held = [...client.rows.values()][0]
      if (held) {
        const id = String(held.value.id)
        const mark = `probe ${n}`
        const start = process.hrtime.bigint()
        await server.pool.query('UPDATE sx_tasks SET note = $2 WHERE id = $1', [id, mark])
        for (
          let waited = 0;
          waited < 20_000 && client.rows.get(`"public"."sx_tasks"/"${id}"`)?.value.note !== mark;
          waited += 2
        ) {
          if (!client.rows.has(`"public"."sx_tasks"/"${id}"`)) break
          await sleep(2)
        }
        if (client.rows.get(`"public"."sx_tasks"/"${id}"`)?.value.note === mark)
          latencies.push(Number(process.hrtime.bigint() - start) / 1e6)
      }
      await sleep(PROBE_MS)
    }
  })()
  return {
    latencies,
    async stop() {
      stopped = true
      await Promise.all([...following, probing])
    }
  }
}

/** Resolves once the server has acknowledged everything written so far: no shape holds a transaction any more. */
async function caughtUp(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
  const started = Date.now()
  for (;;) {
    const { rows: slot } = await pool.query<{ done: boolean }>(
      'SELECT bool_and(confirmed_flush_lsn >= $1::pg_lsn) AS done FROM pg_replication_slots',
      [rows[0]?.lsn]
    )
    if (slot[0]?.done) return Date.now() - started
    await sleep(50)
  }
}

/**
 * Reads every shape from the start and compares it with Postgres: the shapes that differ (with why), and how many were
 * replaced during the run (their handle changed: a 409, e.g. more than 1,000 transactions held by one move-in).
 */
async function verify(server: TestShapeServer, handles: string[]): Promise<{ wrong: string[]; replaced: number }> {
  const wrong: string[] = []
  let replaced = 0
  for (let first = 0; first < handles.length; first += 20) {
    await Promise.all(
      handles.slice(first, first + 20).map(async (_, offset) => {
        const i = first + offset
        const where = whereOf(i)
        const client = new TagClient(server.url, { table: 'sx_tasks', where })
        await client.sync()
        if (client.handle !== handles[i]) replaced += 1
        const { rows } = await server.pool.query<Record<string, string>>(
          `SELECT id::text, project_id::text, bucket::text, val::text, note FROM sx_tasks WHERE ${where}`
        )
        const want = new Map(rows.map((row) => [row.id, row]))
        const problems = [...client.anomalies]
        for (const [id, row] of want) {
          const held = client.rows.get(`"public"."sx_tasks"/"${id}"`)?.value
          if (!held) problems.push(`missing ${id}`)
          else if (Object.keys(row).some((column) => String(held[column]) !== String(row[column])))
            problems.push(`task ${id} is ${JSON.stringify(held)}, Postgres has ${JSON.stringify(row)}`)
        }
        for (const held of client.rows.values())
          if (!want.has(String(held.value.id))) problems.push(`extra ${held.value.id}`)
        if (problems.length > 0) wrong.push(`${where}: ${problems.slice(0, 5).join(', ')}`)
      })
    )
  }
  return { wrong, replaced }
}

async function main(): Promise<void> {
  // why shapes were dropped during the run (each one's clients got 409 and refetched)
  const drops = new Map<string, number>()
  const dropped: string[] = []
  const log = (line: string) => {
    const match = /^subquery shape (\S+) dropped: (.*)$/.exec(line)
    if (!match) return
    const reason = (match[2] ?? '').replace(/\d+/g, 'N')
    drops.set(reason, (drops.get(reason) ?? 0) + 1)
    dropped.push(match[1] ?? '')
  }
  const server = await startTestShapeServer({ longPollTimeout: 2000, log })
  try {
    await createTables(server.pool)
    const createStarted = Date.now()
    const handles: string[] = []
    const followed: TagClient[] = []
    for (let first = 0; first < SHAPES; first += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, SHAPES - first) }, async (_, offset) => {
          const i = first + offset
          const client = new TagClient(server.url, { table: 'sx_tasks', where: whereOf(i) }, true)
          await client.sync()
          if (i % Math.floor(SHAPES / FOLLOWED) === 0 && followed.length < FOLLOWED) followed.push(client)
          return client.handle
        })
      )
      handles.push(...batch)
    }
    report(`${SHAPES} shapes created and synced in ${((Date.now() - createStarted) / 1000).toFixed(1)} s`)
    const probe = followAndProbe(server, followed)
    const cpu = process.cpuUsage()
    const writeStarted = Date.now()
    // writers of their own: the server's test pool has 4 connections
    const writers = new pg.Pool({ connectionString: server.databaseUrl, max: 16 })
    const written = await write(writers).finally(() => writers.end())
    const writeSeconds = (Date.now() - writeStarted) / 1000
    const lag = await caughtUp(server.pool)
    await probe.stop()
    const used = process.cpuUsage(cpu)
    const verifyStarted = Date.now()
    const { wrong, replaced } = await verify(server, handles)
    const live = followed.filter((client) => client.anomalies.length > 0).length
    report('| target | measured | detail | goal |')
    report('|---|---|---|---|')
    report(
      `| 8c. ${SHAPES.toLocaleString('en')} subquery shapes under ${RATE} writes/s for ${SECONDS} s, then each compared with SELECT | **${SHAPES - wrong.length} of ${SHAPES} exact**, ${live} live followers with anomalies | ${written.committed.toLocaleString('en')} transactions committed in ${writeSeconds.toFixed(1)} s (${(written.committed / writeSeconds).toFixed(0)}/s, ${written.failed} rolled back, ${written.late} started over 1 s late); acknowledged ${lag} ms after the last; commit → client on ${followed.length} followed shapes p50 ${percentile(probe.latencies, 50).toFixed(1)} ms, p99 ${percentile(probe.latencies, 99).toFixed(1)} ms (${probe.latencies.length} probes); ${replaced} shapes replaced meanwhile (409, refetched); ${((used.user + used.system) / 1000 / written.committed).toFixed(2)} ms CPU per transaction (server and bench); verified in ${((Date.now() - verifyStarted) / 1000).toFixed(1)} s | every shape exact |`
    )
    for (const [reason, count] of drops) report(`- ${count} shapes dropped: ${reason}`)
    const kinds = ['one level', 'nested', 'OR', 'NOT IN']
    const byKind = new Map<string, number>()
    for (const handle of dropped) {
      const i = handles.indexOf(handle)
      const kind = i < 0 ? 'created during the run' : (kinds[Math.max(0, Math.floor((i * 20) / SHAPES) - 16)] ?? '?')
      byKind.set(kind, (byKind.get(kind) ?? 0) + 1)
    }
    if (byKind.size > 0)
      report(`- dropped by kind of where: ${[...byKind].map(([kind, n]) => `${kind} ${n}`).join(', ')}`)
    for (const line of wrong.slice(0, 20)) report(`- ${line}`)
    if (wrong.length > 0) process.exitCode = 1
  } finally {
    await server.close()
  }
}

void main()
