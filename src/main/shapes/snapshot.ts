import { open } from 'node:fs/promises'
import { join } from 'node:path'
import type pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'
import type { ShapeDefinition } from './definition'
import { CopyEncoder, type EncodedRows } from './copy-encoder'
import { selectRowsSql, setDisplaySettingsSql } from './row-sql'

/** pg_current_snapshot() of a snapshot transaction, as xid8 decimal strings. */
export interface SnapshotInfo {
  xmin: string
  xmax: string
  xipList: string[]
  /** pg_current_wal_lsn() at the snapshot, as a decimal string. */
  databaseLsn: string
}

export interface SnapshotQuery {
  definition: ShapeDefinition
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
async function beginSnapshot(client: pg.PoolClient): Promise<SnapshotInfo> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  await client.query(setDisplaySettingsSql())
  const { rows } = await client.query<{ snapshot: string; lsn: string }>('SELECT pg_current_snapshot()::text AS snapshot, pg_current_wal_lsn()::text AS lsn')
  const row = rows[0]
  if (!row) throw new Error('pg_current_snapshot() returned nothing')
  return parseSnapshot(row.snapshot, row.lsn)
}

const COPY_BATCH_BYTES = 256 * 1024

const COMMA = 44
const NEWLINE = 10

/**
 * Writes encoded rows into chunk files of about `chunkBytes`, cutting only after a row that crosses the threshold.
 * Each file is a complete JSON array (`[row,row,…]`), so a chunk is served as it lies on disk.
 */
class ChunkWriter {
  private chunk = 0
  private chunkSize = 0
  private file: Awaited<ReturnType<typeof open>> | null = null

  constructor(
    private readonly dir: string,
    private readonly chunkBytes: number,
    private readonly onChunk: SnapshotProgress['onChunk']
  ) {}

  /** Adds rows (each ending with a newline, which becomes the `,` between array items or the `]` that closes one). */
  async add({ data, rowEnds }: EncodedRows): Promise<void> {
    for (let at = data.indexOf(NEWLINE); at !== -1; at = data.indexOf(NEWLINE, at + 1)) data[at] = COMMA
    let written = 0
    for (const end of rowEnds) {
      if (this.chunkSize + (end - written) < this.chunkBytes) continue
      data[end - 1] = CLOSE_ARRAY
      await this.write(data.subarray(written, end))
      written = end
      await this.cut(false)
    }
    if (written < data.length) await this.write(data.subarray(written))
  }

  private async write(data: Buffer): Promise<void> {
    if (!this.file) {
      this.file = await open(chunkPath(this.dir, this.chunk), 'w')
      await this.file.write(OPEN_ARRAY_BYTES)
    }
    await this.file.write(data)
    this.chunkSize += data.length
  }

  private async cut(last: boolean): Promise<void> {
    await this.file?.close()
    this.file = null
    this.onChunk(this.chunk, last)
    this.chunk += 1
    this.chunkSize = 0
  }

  /** Ends the snapshot: its last chunk ends with the snapshot-end message. */
  async finish(endLine: string): Promise<void> {
    await this.write(Buffer.from(`${endLine}]`))
    await this.cut(true)
  }

  async abort(): Promise<void> {
    await this.file?.close()
    this.file = null
  }
}

const CLOSE_ARRAY = 93
const OPEN_ARRAY_BYTES = Buffer.from('[')

/** Streams the shape's rows with COPY (Postgres's fastest path) and encodes them, in batches, as insert messages. */
async function copyRows(client: pg.PoolClient, definition: ShapeDefinition, writer: ChunkWriter): Promise<void> {
  const encoder = new CopyEncoder(definition)
  const sql = `COPY (${selectRowsSql(definition.table, encoder.columns, definition.where?.sql ?? null)}) TO STDOUT`
  // Postgres sends a message per row: rows are encoded in batches of complete lines, not one by one.
  let pending: Buffer[] = []
  let pendingSize = 0
  const flush = async (final: boolean) => {
    const data = Buffer.concat(pending)
    const end = final ? data.length : data.lastIndexOf(10) + 1
    pending = end < data.length ? [data.subarray(end)] : []
    pendingSize = data.length - end
    if (end > 0) await writer.add(encoder.encode(data.subarray(0, end)))
  }
  for await (const data of client.query(copyTo(sql)) as AsyncIterable<Buffer>) {
    pending.push(data)
    pendingSize += data.length
    if (pendingSize >= COPY_BATCH_BYTES) await flush(false)
  }
  await flush(true)
}

/** Runs `work` in a snapshot transaction on a pooled connection (whose pool handles connection errors). */
export async function inSnapshot<T>(pool: pg.Pool, work: (client: pg.PoolClient, info: SnapshotInfo) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  try {
    const result = await work(client, await beginSnapshot(client))
    await client.query('COMMIT')
    return result
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}

/** Runs the initial snapshot of a shape into chunk files in `dir`, ending with the snapshot-end message. */
export async function runSnapshot(pool: pg.Pool, dir: string, chunkBytes: number, query: SnapshotQuery, progress: SnapshotProgress): Promise<SnapshotInfo> {
  const writer = new ChunkWriter(dir, chunkBytes, progress.onChunk)
  try {
    return await inSnapshot(pool, async (client, info) => {
      progress.onSnapshot(info)
      if (query.withRows) await copyRows(client, query.definition, writer)
      await writer.finish(snapshotEndMessage(info))
      return info
    })
  } catch (error) {
    await writer.abort()
    throw error
  }
}
