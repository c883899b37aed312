import { open } from 'node:fs/promises'
import type { Duplex } from 'node:stream'
import type pg from 'pg'
import { CONTROL, parseLsn } from '../../../shared/protocol'
import type { ResolvedShape } from '../definition/definition'
import { CopyEncoder, ENCODE_BYTES, type EncodedRows, wholeLinesEnd } from './copy-encoder'
import type { BufferPool } from '../storage/buffer-pool'
import { type HeldChunk, chunkBufferPool, chunkPath } from '../storage/chunk-files'
import type { SnapshotInfo } from '../storage/snapshot-lifecycle'
import { cancelBackend } from './cancel-query'
import { CopyOut } from './copy-out'
import { plainRows } from './plain-rows'
import { qualifiedName, selectRowsSql, setSessionSettingsSql } from '../definition/row-sql'
import { tableIdentity } from '../definition/table-check'

export type { SnapshotInfo } from '../storage/snapshot-lifecycle'

export interface SnapshotQuery {
  definition: ResolvedShape
  /** `changes_only` shapes capture the snapshot but read no rows. */
  withRows: boolean
  /** Reads the rows in the snapshot transaction instead of COPY (subquery shapes, whose rows carry tags). */
  read?: (...args: ReadRowsArgs) => Promise<void>
  /** `copy` (the default): COPY taken off the socket and the WebAssembly encoder; `plain`: the path they must match. */
  rowPath?: 'copy' | 'plain'
  /**
   * Waited for before the snapshot's connection is taken: until a snapshot will include every transaction the shape's
   * log will not get.
   */
  beforeSnapshot?: (signal?: AbortSignal) => Promise<void>
}

export type ReadRowsArgs = [client: pg.PoolClient, info: SnapshotInfo, add: (rows: EncodedRows) => Promise<void>]

export interface SnapshotProgress {
  /** Called once the transaction's snapshot is known, before any row is read. */
  onSnapshot(info: SnapshotInfo): void
  /**
   * Called as each chunk file is complete, with its body; the last one ends with the snapshot-end message. The
   * snapshot's file writes wait for what it returns (and, once they are far enough behind, its rows do too).
   */
  onChunk(chunk: number, last: boolean, body: HeldChunk): void | Promise<void>
}

export function parseSnapshot(text: string, lsn: string): SnapshotInfo {
  const [xmin = '0', xmax = '0', xip = ''] = text.split(':')
  return { xmin, xmax, xipList: xip === '' ? [] : xip.split(','), databaseLsn: lsnToDecimal(lsn) }
}

/** `16/B374D848` → decimal string of the 64-bit position. */
export function lsnToDecimal(lsn: string): string {
  return parseLsn(lsn).toString()
}

export function snapshotEndMessage(info: SnapshotInfo): string {
  return JSON.stringify({
    headers: { control: CONTROL.snapshotEnd, xmin: info.xmin, xmax: info.xmax, xip_list: info.xipList }
  })
}

/**
 * Opens a REPEATABLE READ transaction with the display settings and reads its snapshot; `prepare` runs before the
 * snapshot is taken (SET and LOCK take none), so the snapshot sees everything committed before it returned.
 */
async function beginSnapshot(
  client: pg.PoolClient,
  prepare?: (client: pg.PoolClient) => Promise<void>
): Promise<SnapshotInfo> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  await client.query(setSessionSettingsSql())
  await prepare?.(client)
  const { rows } = await client.query<{ snapshot: string; lsn: string }>(
    'SELECT pg_current_snapshot()::text AS snapshot, pg_current_wal_lsn()::text AS lsn'
  )
  const row = rows[0]
  if (!row) throw new Error('pg_current_snapshot() returned nothing')
  return parseSnapshot(row.snapshot, row.lsn)
}

const COMMA = 44

/** A chunk's body as it is built, in a pooled buffer: the bytes so far, growing when a row would not fit. */
class ChunkBody {
  buffer: Buffer
  length = 0

  constructor(private readonly pool: BufferPool) {
    this.buffer = pool.take()
  }

  append(data: Buffer): void {
    if (this.length + data.length > this.buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + data.length))
      this.buffer.copy(bigger, 0, 0, this.length)
      this.buffer = bigger
    }
    this.buffer.set(data, this.length)
    this.length += data.length
  }

  held(): HeldChunk {
    const { buffer, pool } = this
    let released = false
    return {
      bytes: buffer.subarray(0, this.length),
      release: () => {
        if (!released) pool.give(buffer)
        released = true
      }
    }
  }
}

/**
 * Cuts encoded rows into chunks of about `chunkBytes`, only after a row that crosses the threshold. Each chunk is a
 * complete JSON array (`[row,row,…]`), built in memory; a finished chunk is handed over as it will be served, so a
 * client following the snapshot gets it without reading the file back. File writes run in order behind the encoding
 * (never more than MAX_QUEUED_BYTES behind), and a chunk is announced once its file is complete.
 */
class ChunkWriter {
  private chunk = 0
  /** The chunk being built; null once the last one is cut. */
  private body: ChunkBody | null
  /** How much of `body` is handed to the file queue. */
  private flushed = 0
  private file: Awaited<ReturnType<typeof open>> | null = null
  /** The file work, in order; rejected once a write fails. */
  private io: Promise<void> = Promise.resolve()
  private queued = 0
  /** Set by stop(): nothing more is written or handed over, and the bodies not handed over go back to their pool. */
  private stopped = false

  constructor(
    private readonly dir: string,
    private readonly chunkBytes: number,
    private readonly onChunk: SnapshotProgress['onChunk']
  ) {
    this.body = this.newBody()
  }

  private get current(): ChunkBody {
    if (!this.body) throw new Error('the snapshot is already finished')
    return this.body
  }

  private newBody(): ChunkBody {
    const body = new ChunkBody(chunkBufferPool(this.chunkBytes))
    body.append(OPEN_ARRAY_BYTES)
    return body
  }

  /** Adds rows (each ending with a newline, which becomes the `,` between array items or the `]` that closes one). */
  async add({ data, rowEnds }: EncodedRows): Promise<void> {
    if (this.stopped) throw new SnapshotCancelledError()
    for (const end of rowEnds) data[end - 1] = COMMA
    let taken = 0
    for (const end of rowEnds) {
      if (this.current.length + (end - taken) < this.chunkBytes) continue
      data[end - 1] = CLOSE_ARRAY
      this.current.append(data.subarray(taken, end))
      taken = end
      this.cut(false)
    }
    if (taken < data.length) this.current.append(data.subarray(taken))
    if (this.current.length - this.flushed >= FLUSH_BYTES) this.flush()
    if (this.queued > MAX_QUEUED_BYTES) await this.io
  }

  private queue(bytes: number, work: () => Promise<void>): void {
    this.queued += bytes
    this.io = this.io.then(async () => {
      await work()
      this.queued -= bytes
    })
    // a failed write surfaces at the next await of `io`, not as an unhandled rejection meanwhile
    this.io.catch(() => undefined)
  }

  private flush(): void {
    const { chunk, current: body, flushed } = this
    const end = body.length
    if (end === flushed) return
    this.flushed = end
    this.queue(end - flushed, async () => {
      if (this.stopped) return
      this.file ??= await open(chunkPath(this.dir, chunk), 'w')
      await this.file.write(body.buffer, flushed, end - flushed)
    })
  }

  private cut(last: boolean): void {
    this.flush()
    const { chunk, current: body } = this
    this.queue(0, async () => {
      await this.file?.close()
      this.file = null
      if (this.stopped) body.held().release()
      else await this.onChunk(chunk, last, body.held())
    })
    this.chunk += 1
    this.body = last ? null : this.newBody()
    this.flushed = 0
  }

  /** Ends the snapshot: its last chunk ends with the snapshot-end message. */
  async finish(endLine: string): Promise<void> {
    this.current.append(Buffer.from(`${endLine}]`))
    this.cut(true)
    await this.io
  }

  /** Stops at once: no file write or chunk after this call (the ones under way finish; abort() waits for them). */
  stop(): void {
    this.stopped = true
  }

  /** Stops, and waits until no file of the snapshot is written or open any more. */
  async abort(): Promise<void> {
    this.stop()
    await this.io.catch(() => undefined)
    await this.file?.close()
    this.file = null
    this.body?.held().release()
    this.body = null
  }
}

/** How far file writes may fall behind the encoding. */
const MAX_QUEUED_BYTES = 32 * 1024 * 1024
/** Bytes gathered before a write to the chunk's file. */
const FLUSH_BYTES = 1024 * 1024
const CLOSE_ARRAY = 93
const OPEN_ARRAY_BYTES = Buffer.from('[')

/** Streams the shape's rows with COPY (Postgres's fastest path) and encodes them, a socket read at a time. */
async function copyRows(
  client: pg.PoolClient,
  definition: ResolvedShape,
  writer: ChunkWriter,
  signal: AbortSignal | undefined
): Promise<void> {
  const encoder = new CopyEncoder(definition)
  const copy = client.query(
    new CopyOut(`COPY (${selectRowsSql(definition.table, encoder.columns, definition.where?.sql ?? null)}) TO STDOUT`)
  )
  for await (const lines of copy.batches()) {
    if (signal?.aborted) throw new SnapshotCancelledError()
    for (let start = 0; start < lines.length;) {
      const end = wholeLinesEnd(lines, start, ENCODE_BYTES)
      await writer.add(encoder.encode(lines.subarray(start, end)))
      start = end
    }
  }
}

/** The shape's table was dropped, recreated or changed its columns before the snapshot could read it. */
export class TableChangedError extends Error {
  override readonly name = 'TableChangedError'
}

const UNDEFINED_TABLE = '42P01'

/**
 * Locks the shape's table against schema changes for the rest of the snapshot, then makes sure it is still the table
 * the definition was built on: a DROP, a re-CREATE or an ALTER that committed since would otherwise be read with the
 * old definition (or fail as if the shape were broken). Runs before the transaction's snapshot is taken: a catalog
 * query in a snapshot taken before the lock would see the table as it was then.
 */
async function lockSameTable(client: pg.PoolClient, definition: ResolvedShape): Promise<void> {
  const { table } = definition
  try {
    await client.query(`LOCK TABLE ${qualifiedName(table)} IN ACCESS SHARE MODE`)
  } catch (error) {
    if ((error as { code?: unknown }).code === UNDEFINED_TABLE)
      throw new TableChangedError(`${qualifiedName(table)} was dropped`)
    throw error
  }
  const now = await tableIdentity(client, table.schema, table.name)
  if (now?.oid !== table.oid || now.fingerprint !== table.fingerprint)
    throw new TableChangedError(`${qualifiedName(table)} changed`)
}

/** A snapshot stopped by its AbortSignal (its shape was dropped, or the server stops). */
export class SnapshotCancelledError extends Error {
  override readonly name = 'SnapshotCancelledError'
  constructor() {
    super('the snapshot was cancelled')
  }
}

/** How long a cancelled snapshot waits for Postgres to end its query before its connection is cut. */
const CANCEL_GRACE_MS = 5_000

/**
 * Runs `work` in a snapshot transaction on a pooled connection (whose pool handles connection errors). When `signal`
 * aborts, the backend's query is cancelled and the connection is closed rather than returned to the pool: a cancel
 * that arrives late must not hit the next user of the connection.
 */
export async function inSnapshot<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, info: SnapshotInfo) => Promise<T>,
  { signal, prepare }: { signal?: AbortSignal; prepare?: (client: pg.PoolClient) => Promise<void> } = {}
): Promise<T> {
  if (signal?.aborted) throw new SnapshotCancelledError()
  const client = await pool.connect()
  if (signal?.aborted) {
    client.release()
    throw new SnapshotCancelledError()
  }
  let cancelled = false
  let unanswered: NodeJS.Timeout | undefined
  const cancel = (): void => {
    cancelled = true
    void cancelBackend(client)
    // a cancel Postgres did not act on (unreachable, or the backend past its query) must not hold the snapshot open
    unanswered = setTimeout(
      () => (client as unknown as { connection: { stream: Duplex } }).connection.stream.destroy(),
      CANCEL_GRACE_MS
    )
  }
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    const info = await beginSnapshot(client, prepare)
    if (cancelled) throw new SnapshotCancelledError()
    const result = await work(client, info)
    if (cancelled) throw new SnapshotCancelledError()
    await client.query('COMMIT')
    return result
  } catch (error) {
    if (!cancelled) await client.query('ROLLBACK').catch(() => undefined)
    throw cancelled ? new SnapshotCancelledError() : error
  } finally {
    signal?.removeEventListener('abort', cancel)
    clearTimeout(unanswered)
    client.release(cancelled)
  }
}

/**
 * Runs the initial snapshot of a shape into chunk files in `dir`, ending with the snapshot-end message. When `signal`
 * aborts, no chunk is handed over any more, the query is cancelled, and the promise settles (SnapshotCancelledError)
 * only once no file of `dir` is written or open.
 */
export async function runSnapshot(
  pool: pg.Pool,
  dir: string,
  chunkBytes: number,
  query: SnapshotQuery,
  progress: SnapshotProgress,
  signal?: AbortSignal
): Promise<SnapshotInfo> {
  const writer = new ChunkWriter(dir, chunkBytes, progress.onChunk)
  const stop = (): void => writer.stop()
  signal?.addEventListener('abort', stop, { once: true })
  try {
    // before a connection is taken: the wait reads snapshots of its own on the same pool
    await query.beforeSnapshot?.(signal)
    return await inSnapshot(
      pool,
      async (client, info) => {
        progress.onSnapshot(info)
        if (query.read) await query.read(client, info, (rows) => writer.add(rows))
        else if (query.withRows && query.rowPath === 'plain')
          await plainRows(client, query.definition, (rows) => writer.add(rows))
        else if (query.withRows) await copyRows(client, query.definition, writer, signal)
        await writer.finish(snapshotEndMessage(info))
        return info
      },
      { signal, prepare: (client) => lockSameTable(client, query.definition) }
    )
  } catch (error) {
    await writer.abort()
    throw error
  } finally {
    signal?.removeEventListener('abort', stop)
  }
}
