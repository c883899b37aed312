import type pg from 'pg'
import { expectClientsMatchPostgres, TEXT_VALUES } from '../../support/converge'
import type { Rows } from '../../support/random-writes'
import { controls, get, materialise, messages, type Message } from '../../support/shape-http'

/** A client's position in a shape: what it would send to resume. */
export interface Position {
  handle: string
  offset: string
}

export interface Followed extends Position {
  rows: Rows
  /** Statuses seen, in order (409s included). */
  statuses: number[]
}

/**
 * Syncs a shape to up-to-date as a client does: from `from` (or `-1`), starting over on 409 must-refetch; rows are
 * materialised from `start` (what the client held at `from`).
 */
export async function followToEnd(
  base: string,
  shape: Record<string, string>,
  from?: Position & { rows: Rows },
  timeoutMs = 30_000
): Promise<Followed> {
  const deadline = Date.now() + timeoutMs
  let rows: Rows = new Map(from?.rows ?? [])
  let handle = from?.handle ?? ''
  let offset = from?.offset ?? '-1'
  const statuses: number[] = []
  while (Date.now() < deadline) {
    const params: Record<string, string> = { ...shape, offset }
    if (offset !== '-1') params.handle = handle
    const response = await get(base, params)
    statuses.push(response.status)
    if (response.status === 409) {
      rows = new Map()
      offset = '-1'
      handle = ''
      continue
    }
    if (response.status >= 500) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      continue
    }
    if (response.status !== 200) throw new Error(`unexpected ${response.status}: ${response.text}`)
    const list = messages(response) as Message[]
    materialise(rows, list)
    handle = response.header('@handle') ?? handle
    offset = response.header('@offset') ?? offset
    if (controls(response).includes('up-to-date')) return { handle, offset, rows, statuses }
  }
  throw new Error(`no up-to-date within ${timeoutMs} ms (statuses ${statuses.join(',')})`)
}

/** The rows of `table` (optionally filtered), keyed as shape messages key them, values as Postgres prints them. */
export async function tableRows(pool: pg.Pool, table: string, keyColumn = 'id', where?: string): Promise<Rows> {
  const { rows } = await pool.query<Record<string, string | null>>({
    text: `SELECT * FROM ${table}${where ? ` WHERE ${where}` : ''}`,
    types: TEXT_VALUES
  })
  return new Map(rows.map((row) => [`"public"."${table}"/"${row[keyColumn]}"`, row]))
}

/**
 * Clients of `table` (the shape `{ table }`) on `url`, each resuming from `from` (from -1 without it), end with exactly
 * the rows of the table in Postgres now: each is synced to up-to-date again until it does.
 */
export async function expectSyncsMatchTable(
  pool: pg.Pool,
  table: string,
  syncs: Array<{ url: string; from?: Position & { rows: Rows } }>
): Promise<void> {
  await expectClientsMatchPostgres(pool, syncs, {
    rows: async ({ url, from }) => (await followToEnd(url, { table }, from)).rows,
    expected: (pool) => tableRows(pool, table),
    label: ({ url, from }) => `${table} on ${url} from ${from?.offset ?? '-1'}`,
    timeout: 10_000
  })
}
