import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from './postgres'

export interface TestDatabase {
  readonly postgres: TestPostgres
  readonly url: string
  /** A small pool on it (2 connections). */
  readonly pool: pg.Pool
}

/**
 * A fresh Postgres for the tests of the calling describe (or file): started with a pool on it and `setupSql` run in
 * beforeAll, destroyed (cluster included) in afterAll.
 */
export function useTestDatabase(
  setupSql: readonly string[] = [],
  options: { pool?: Omit<pg.PoolConfig, 'connectionString'> } = {}
): TestDatabase {
  let started: { postgres: TestPostgres; pool: pg.Pool } | null = null
  const get = () => {
    if (!started) throw new Error('useTestDatabase: the database is only there inside its tests (after beforeAll)')
    return started
  }
  beforeAll(async () => {
    const postgres = await startTestPostgres()
    const pool = new pg.Pool({ max: 2, ...options.pool, connectionString: postgres.url })
    ignoreConnectionErrors(pool)
    started = { postgres, pool }
    for (const sql of setupSql) await pool.query(sql)
  })
  afterAll(async () => {
    await started?.pool.end()
    await started?.postgres.destroy()
    started = null
  })
  return {
    get postgres() {
      return get().postgres
    },
    get url() {
      return get().postgres.url
    },
    get pool() {
      return get().pool
    }
  }
}
