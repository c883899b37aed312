import { open } from 'node:fs/promises'
import { join } from 'node:path'
import type pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'
import { copyVerbatim, insertMessagesSql, setDisplaySettingsSql } from './row-sql'
import type { TableInfo } from './table-info'

/** pg_current_snapshot() of a snapshot transaction, as xid8 decimal strings. */
export interface SnapshotInfo {
  xmin: string
  xmax: string
  xipList: string[]
  /** pg_current_wal_lsn() at the snapshot, as a decimal string. */
  databaseLsn: string
}

export interface SnapshotQuery {
  table: TableInfo
  columns: readonly string[]
  whereSql: string | null
  /** `changes_only` shapes capture the snapshot but read no rows. */
  withRows: boolean
}

export interface SnapshotProgress {
  /** Called once the transaction's snapshot is known, before any row is read. */
  onSnapshot(info: SnapshotInfo): void
  /** Called as each chunk file is complete; the last one ends with the snapshot-end message. */
  onChunk(chunk: number, last: boolean): void
}

export const chunkPath = (dir: string, chunk: number): string => join(dir, `snapshot-${chunk}.jsonl`)

export function parseSnapshot(text: string, lsn: string): SnapshotInfo {
  const [xmin = '0', xmax = '0', xip = ''] = text.split(':')
  return { xmin, xmax, xipList: xip === '' ? [] : xip.split(','), databaseLsn: lsnToDecimal(lsn) }
}

/** `16/B374D848` → decimal string of the 64-bit position. */
export function lsnToDecimal(lsn: string): string {
  const [high = '0', low = '0'] = lsn.split('/')
  return ((BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)).toString()
}

export function snapshotEndMessage(info: SnapshotInfo): string {
  return JSON.stringify({ headers: { control: 'snapshot-end', xmin: info.xmin, xmax: info.xmax, xip_list: info.xipList } })
}

/** Opens a REPEATABLE READ transaction with the display settings and reads its snapshot. */
export async function beginSnapshot(client: pg.PoolClient): Promise<SnapshotInfo> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  await client.query(setDisplaySettingsSql())
  const { rows } = await client.query<{ snapshot: string; lsn: string }>('SELECT pg_current_snapshot()::text AS snapshot, pg_current_wal_lsn()::text AS lsn')
  const row = rows[0]
  if (!row) throw new Error('pg_current_snapshot() returned nothing')
  return parseSnapshot(row.snapshot, row.lsn)
}

/** Writes lines into chunk files of about `chunkBytes`, cutting only after a line that crosses the threshold. */
class ChunkWriter {
  private chunk = 0
  private bytes = 0
  private file: Awaited<ReturnType<typeof open>> | null = null

  constructor(
    private readonly dir: string,
    private readonly chunkBytes: number,
    private readonly onChunk: SnapshotProgress['onChunk']
  ) {}

  private async current() {
    this.file ??= await open(chunkPath(this.dir, this.chunk), 'w')
    return this.file
  }

  async write(data: Buffer): Promise<void> {
    let from = 0
    while (from < data.length) {
      const crossing = from + Math.max(1, this.chunkBytes - this.bytes) - 1
      const newline = crossing < data.length ? data.indexOf(10, crossing) : -1
      const end = newline === -1 ? data.length : newline + 1
      await (await this.current()).write(data.subarray(from, end))
      this.bytes += end - from
      from = end
      if (newline !== -1) await this.cut(false)
    }
  }

  private async cut(last: boolean): Promise<void> {
    await (await this.current()).close()
    this.file = null
    this.onChunk(this.chunk, last)
    this.chunk += 1
    this.bytes = 0
  }

  async finish(endLine: string): Promise<void> {
    await (await this.current()).write(`${endLine}\n`)
    await this.cut(true)
  }

  async abort(): Promise<void> {
    await this.file?.close()
    this.file = null
  }
}

/** Runs the initial snapshot of a shape into chunk files in `dir`, ending with the snapshot-end message. */
export async function runSnapshot(pool: pg.Pool, dir: string, chunkBytes: number, query: SnapshotQuery, progress: SnapshotProgress): Promise<SnapshotInfo> {
  const client = await pool.connect()
  // a connection lost mid-query rejects the query; the event must not crash the app
  client.on('error', () => undefined)
  const writer = new ChunkWriter(dir, chunkBytes, progress.onChunk)
  try {
    const info = await beginSnapshot(client)
    progress.onSnapshot(info)
    if (query.withRows) {
      const stream = client.query(copyTo(copyVerbatim(insertMessagesSql(query.table, query.columns, query.whereSql))))
      for await (const data of stream as AsyncIterable<Buffer>) await writer.write(data)
    }
    await client.query('COMMIT')
    await writer.finish(snapshotEndMessage(info))
    return info
  } catch (error) {
    await writer.abort()
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}
