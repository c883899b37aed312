import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { findFreePort } from '../../src/main/net/free-port'
import { ignoreConnectionErrors, startTestPostgres } from './postgres'
import { sleep } from './random-writes'
import { kill9, serveOutput, startServe } from './serve-process'
import { auditOf, auditing, startAudit } from './subquery-audit'
import { FOLLOWER_KINDS, type FollowerKind, type ShapeFollower, followShape } from './subquery-followers'
import {
  SENTINEL_ISSUE,
  WORKLOAD_SHAPES,
  type WorkloadShape,
  createWorkloadTables,
  differences,
  expectedRows,
  insertSentinel,
  writeWorkload
} from './subquery-workload'

export interface ChaosOptions {
  seed: number
  /** How long the writers write. */
  seconds: number
  writers: number
  /** Pause after each transaction of a writer. */
  pauseMs?: number
  /** kill -9 the server once, half way through, and start it again. */
  killServer: boolean
  shapes?: WorkloadShape[]
  kinds?: FollowerKind[]
  /** How long every client may take to receive the sentinel. */
  catchUpMs?: number
}

export interface ChaosReport {
  seed: number
  committed: number
  clients: number
  /** One line per client that does not hold exactly what Postgres returns (empty: all exact). */
  failures: string[]
}

const SERVE_ARGS = ['--header-brand', 'electric', '--long-poll-timeout', '2000', '--sse-keep-alive', '1000']

/** Until `done()` holds or `ms` passed; returns whether it held. */
async function waitFor(done: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!done()) {
    if (Date.now() > deadline) return false
    await sleep(100)
  }
  return true
}

/**
 * The randomized subquery test (issue 30): a real Postgres, `syncscope serve` as a child process, every workload shape
 * followed by the official ShapeStream (long-poll and SSE) and TanStack DB collections, random transactions from
 * several writers (and, once, kill -9 of the server), then a sentinel issue every shape holds; once every client has
 * it, each must hold exactly what the same SELECT returns. The seed picks the workload; it is printed with a failure.
 */
export async function runSubqueryChaos(options: ChaosOptions): Promise<ChaosReport> {
  const shapes = options.shapes ?? WORKLOAD_SHAPES
  const kinds = options.kinds ?? FOLLOWER_KINDS
  const database = await startTestPostgres()
  const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-chaos-'))
  const pool = new pg.Pool({
    connectionString: database.url,
    max: options.writers + 2,
    types: { getTypeParser: () => (value: string) => value }
  })
  ignoreConnectionErrors(pool)
  let server: ChildProcess | null = null
  let log = ''
  const followers: ShapeFollower[] = []
  try {
    await createWorkloadTables(pool)
    if (auditing()) await startAudit(pool)
    const port = await findFreePort()
    const base = `http://127.0.0.1:${port}`
    server = await startServe(database.url, dataDir, port, SERVE_ARGS)
    for (const shape of shapes) for (const kind of kinds) followers.push(followShape(base, shape, kind))
    const initial = new Map(
      await Promise.all(shapes.map(async (shape) => [shape, await expectedRows(pool, shape)] as const))
    )
    const synced = await waitFor(
      () =>
        followers.every(
          (follower) => differences(initial.get(follower.shape) ?? new Map(), follower.rows()).length === 0
        ),
      60_000
    )
    if (!synced) throw new Error(`seed ${options.seed}: the clients did not finish their initial sync`)

    const end = Date.now() + options.seconds * 1000
    const writing = writeWorkload(pool, {
      seed: options.seed,
      writers: options.writers,
      running: () => Date.now() < end,
      pauseMs: options.pauseMs
    })
    if (options.killServer) {
      await sleep((options.seconds * 1000) / 2)
      log += serveOutput(server)
      await kill9(server)
      server = await startServe(database.url, dataDir, port, SERVE_ARGS)
    }
    const committed = await writing
    await insertSentinel(pool)
    await waitFor(() => followers.every((follower) => follower.rows().has(SENTINEL_ISSUE)), options.catchUpMs ?? 60_000)
    const failures = await compareWithPostgres(pool, followers)
    log += serveOutput(server)
    if (failures.length > 0) failures.push(`server log (seed ${options.seed}):\n${log.slice(-4000)}`)
    return { seed: options.seed, committed, clients: followers.length, failures }
  } finally {
    for (const follower of followers) follower.stop()
    if (server) await kill9(server)
    await pool.end().catch(() => undefined)
    await database.destroy()
    await rm(dataDir, { recursive: true, force: true })
  }
}

/** One line (and the history of each issue in question) per client that does not hold exactly what Postgres returns. */
async function compareWithPostgres(pool: pg.Pool, followers: readonly ShapeFollower[]): Promise<string[]> {
  const failures: string[] = []
  for (const follower of followers) {
    const got = follower.rows()
    if (!got.has(SENTINEL_ISSUE)) {
      failures.push(`${follower.label}: never received the sentinel issue`)
      continue
    }
    const found = [...differences(await expectedRows(pool, follower.shape), got), ...follower.anomalies()]
    if (found.length === 0) continue
    failures.push(`${follower.label}: ${found.slice(0, 8).join('; ')}`)
    failures.push(`  last requests:\n    ${follower.requests().slice(-15).join('\n    ')}`)
    for (const id of new Set(found.flatMap((line) => /issues?\W+(\d+)/.exec(line)?.[1] ?? []))) {
      const history = follower.history(id)
      if (history.length > 0) failures.push(`  history of issue ${id}:\n    ${history.slice(-20).join('\n    ')}`)
      if (auditing()) failures.push(`  in Postgres:\n    ${(await auditOf(pool, id)).join('\n    ')}`)
    }
  }
  return failures
}

/** The seed of a run: `SUBQUERY_SEED` when set (to replay a failure), else a new one. */
export const chaosSeed = (): number => Number(process.env.SUBQUERY_SEED ?? Math.floor(Math.random() * 2 ** 31))
