import { existsSync, readdirSync, statSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { CONTROL } from '../../shared/protocol'
import { MessageSchema, type Message } from '../../shared/shape-client/messages'
import { chunkPath } from '../shapes/storage/chunk-files'
import { parseJson } from '../shapes/storage/json-file'
import { formatOffset } from '../shapes/storage/offset'
import { ShapeMetaSchema, type ShapeMeta } from '../shapes/storage/shape'
import { readLogReadOnly } from '../shapes/storage/read-only-log'
import { ShapeDamagedError } from '../shapes/storage/shape-log'
import { MAX_LOG_BYTES, MAX_LOG_MESSAGES, TimeTravelInputError, type LogRecord, type ReadLog } from './log'

/**
 * The local shape server's files, read without it and without writing anything: a shape folder is found by its handle
 * under `<data folder>/shapes/<database>/shapes/`, its snapshot chunks checked against meta.json, its log read entry by
 * entry against their checksums (storage's readLogReadOnly), so a server appending meanwhile is never disturbed and a
 * half-written entry is never taken. Everything the storage layer's layout means is asked of its own functions.
 */

/** The shape's snapshot is still being written: its files do not hold a whole log yet. */
export class SnapshotUnfinishedError extends TimeTravelInputError {}

/** A handle as the shape server makes them (`<hash>-<µs>`): anything else never names a folder. */
const HANDLE = /^[0-9]{1,40}-[0-9]{1,40}$/

/** The folder of the shape `handle` in a data folder, or null when none holds it (a few directory reads). */
export function findShapeFolder(dataDir: string, handle: string): string | null {
  if (!HANDLE.test(handle)) return null
  let databases: string[]
  try {
    databases = readdirSync(join(dataDir, 'shapes'))
  } catch {
    return null
  }
  for (const database of databases) {
    const dir = join(dataDir, 'shapes', database, 'shapes', handle)
    if (statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return dir
  }
  return null
}

/** Shapes read at most at once from a data folder (each log may hold a million messages). */
export const MAX_LOCAL_SHAPES = 100

/** The folders of every shape of a data folder whose snapshot is finished; TimeTravelInputError past MAX_LOCAL_SHAPES. */
export async function listShapeFolders(dataDir: string): Promise<string[]> {
  const found: string[] = []
  for (const database of await readdir(join(dataDir, 'shapes')).catch(() => [] as string[])) {
    const shapes = join(dataDir, 'shapes', database, 'shapes')
    for (const handle of await readdir(shapes).catch(() => [] as string[])) {
      if (!HANDLE.test(handle) || !(await readMeta(join(shapes, handle)).catch(() => null))) continue
      found.push(join(shapes, handle))
      if (found.length > MAX_LOCAL_SHAPES)
        throw new TimeTravelInputError(`${dataDir} holds more than ${MAX_LOCAL_SHAPES} shapes: name them with --shape`)
    }
  }
  return found
}

async function readMeta(dir: string): Promise<ShapeMeta> {
  const text = await readFile(join(dir, 'meta.json'), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT')
      throw new SnapshotUnfinishedError(`shape ${handleOf(dir)} has no finished snapshot yet (no meta.json)`)
    throw error
  })
  const meta = ShapeMetaSchema.safeParse(parseJson(text))
  if (!meta.success) throw new TimeTravelInputError(`${join(dir, 'meta.json')} is damaged or of another version`)
  return meta.data
}

/** How long a reader waits for meta.json: the server writes it once the snapshot's files are durable (fsyncs). */
const META_WAIT_MS = 10_000

/** readMeta, waiting a while for a snapshot that is complete but not yet recorded (its folder still there). */
async function awaitMeta(dir: string): Promise<ShapeMeta> {
  const deadline = Date.now() + META_WAIT_MS
  for (;;) {
    try {
      return await readMeta(dir)
    } catch (error) {
      if (!(error instanceof SnapshotUnfinishedError) || Date.now() > deadline || !existsSync(dir)) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

const handleOf = (dir: string): string => dir.split(/[\\/]/).at(-1) ?? dir

function parseMessage(text: string, where: string): Message {
  const message = MessageSchema.safeParse(parseJson(text))
  if (!message.success) throw new TimeTravelInputError(`${where} is not a shape message`)
  return message.data
}

/** The snapshot's messages, chunk k at `0_k` (as a client reads them), each chunk checked first. */
async function readSnapshot(dir: string, meta: ShapeMeta, budget: { bytes: number }): Promise<LogRecord[]> {
  const records: LogRecord[] = []
  for (const [chunk, check] of meta.chunks.entries()) {
    budget.bytes -= check.bytes
    if (budget.bytes < 0) throw new TimeTravelInputError(`shape ${meta.handle} takes more than ${MAX_LOG_BYTES} bytes`)
    const bytes = await readFile(chunkPath(dir, chunk))
    if (bytes.length !== check.bytes || crc32(bytes) !== check.crc)
      throw new TimeTravelInputError(
        `snapshot-${chunk}.jsonl of shape ${meta.handle} does not match its length and checksum`
      )
    const items = parseJson(bytes.toString('utf8'))
    if (!Array.isArray(items)) throw new TimeTravelInputError(`snapshot-${chunk}.jsonl is not a JSON array`)
    for (const item of items) {
      const message = MessageSchema.safeParse(item)
      if (!message.success) throw new TimeTravelInputError(`snapshot-${chunk}.jsonl holds something not a message`)
      records.push({ offset: `0_${chunk}`, exact: true, message: message.data })
    }
  }
  return records
}

/** The whole log of the shape in `dir`: snapshot, then main log, as far as it is durable and whole. */
export async function readShapeFolder(dir: string): Promise<ReadLog> {
  try {
    const meta = await awaitMeta(dir)
    const budget = { bytes: MAX_LOG_BYTES }
    const records = await readSnapshot(dir, meta, budget)
    const log = await readLogReadOnly(dir, budget.bytes)
    if (records.length + log.entries.length > MAX_LOG_MESSAGES)
      throw new TimeTravelInputError(`shape ${meta.handle} has more than ${MAX_LOG_MESSAGES} messages`)
    for (const entry of log.entries) {
      const offset = formatOffset(entry.offset)
      records.push({ offset, exact: true, message: parseMessage(entry.line, `the log entry at ${offset}`) })
    }
    const last = log.entries.at(-1)
    const notes = log.stopped
      ? [`read the log up to ${last ? formatOffset(last.offset) : '0_inf'}: ${log.stopped} (being written, or torn)`]
      : []
    if (!records.some((record) => (record.message.headers as { control?: unknown }).control === CONTROL.snapshotEnd))
      notes.push('the snapshot has no snapshot-end message')
    return {
      source: { kind: 'local-files', description: dir },
      url: null,
      definition: meta.input,
      handle: meta.handle,
      server: null,
      records,
      end: last ? formatOffset(last.offset) : '0_inf',
      complete: true,
      notes
    }
  } catch (error) {
    if (error instanceof ShapeDamagedError) throw new TimeTravelInputError(error.message)
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new TimeTravelInputError(`shape ${handleOf(dir)} was dropped while it was read (its files are gone)`)
    throw error
  }
}
