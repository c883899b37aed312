import { readFile } from 'node:fs/promises'
import type pg from 'pg'
import { z } from 'zod'
import { HistoryEntrySchema, type QueryResult } from '../../shared/contract/db'
import { writeAtomically } from '../fs/atomic-write'

const MAX_ROWS = 1000
const MAX_HISTORY = 200

type HistoryEntry = z.infer<typeof HistoryEntrySchema>
type StatementResult = Extract<QueryResult, { ok: true }>['results'][number]

interface PgResultLike {
  command: string
  rowCount: number | null
  fields: { name: string; dataTypeID: number }[]
  rows: unknown[][]
}

interface PgErrorLike {
  message: string
  code?: string
  position?: string
  detail?: string
  hint?: string
}

export interface SqlConsole {
  run(sql: string): Promise<QueryResult>
  history(): HistoryEntry[]
}

/** Runs statements with the simple query protocol (several statements allowed) and keeps a history on disk. */
export async function createSqlConsole(pool: pg.Pool, historyFile: string): Promise<SqlConsole> {
  const entries = await readHistory(historyFile)
  const typeNames = new Map<number, string>()

  async function typeName(oid: number): Promise<string> {
    if (!typeNames.has(oid)) {
      const { rows } = await pool.query<{ name: string }>('SELECT format_type($1::oid, NULL) AS name', [oid])
      typeNames.set(oid, rows[0]?.name ?? String(oid))
    }
    return typeNames.get(oid) ?? String(oid)
  }

  async function toStatementResult(result: PgResultLike): Promise<StatementResult> {
    const fields = await Promise.all(
      result.fields.map(async (f) => ({ name: f.name, type: await typeName(f.dataTypeID) }))
    )
    const rows = result.rows.slice(0, MAX_ROWS).map((row) => row.map((v) => (v === null ? null : String(v))))
    return {
      command: result.command ?? '',
      rowCount: result.rowCount,
      fields,
      rows,
      truncated: result.rows.length > MAX_ROWS
    }
  }

  async function remember(sql: string, ok: boolean, summary: string): Promise<void> {
    entries.unshift({ sql, at: new Date().toISOString(), ok, summary })
    entries.splice(MAX_HISTORY)
    await writeAtomically(historyFile, JSON.stringify(entries, null, 2))
  }

  return {
    history: () => [...entries],
    async run(sql) {
      const started = performance.now()
      try {
        const raw = (await pool.query({ text: sql, rowMode: 'array' })) as unknown as PgResultLike | PgResultLike[]
        const results = await Promise.all((Array.isArray(raw) ? raw : [raw]).map(toStatementResult))
        await remember(sql, true, results.map(describe).join('; '))
        return { ok: true, results, durationMs: performance.now() - started }
      } catch (error) {
        const pgError = toPostgresError(error as PgErrorLike)
        await remember(sql, false, `${pgError.code ?? 'error'}: ${pgError.message}`)
        return { ok: false, error: pgError, durationMs: performance.now() - started }
      }
    }
  }
}

const describe = (result: StatementResult): string =>
  result.rowCount === null ? result.command : `${result.command} ${result.rowCount}`

function toPostgresError(error: PgErrorLike) {
  return {
    message: error.message,
    code: error.code ?? null,
    position: error.position ? Number(error.position) : null,
    detail: error.detail ?? null,
    hint: error.hint ?? null
  }
}

async function readHistory(file: string): Promise<HistoryEntry[]> {
  try {
    return z.array(HistoryEntrySchema).parse(JSON.parse(await readFile(file, 'utf8')))
  } catch {
    return []
  }
}
