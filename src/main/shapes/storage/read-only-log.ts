import { type FileHandle, open } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { CHECKED_BYTES, RECORD_BYTES, VERIFY_BLOCK_BYTES, entryChecksum } from './log-format'
import { type LogOffset, SNAPSHOT_END, compareOffsets } from './offset'
import { ShapeDamagedError } from './shape-log'

/** One entry of a log read without its server: its offset and its message's JSON (no newline). */
export interface ReadOnlyEntry {
  offset: LogOffset
  line: string
}

/**
 * Reads the log in `dir` without writing or truncating anything (its server may be appending to it meanwhile): every
 * entry that matches its checksum, in order, and where the read stopped short — at an entry being appended, torn by a
 * crash, or damaged — null when it read them all. Refuses (ShapeDamagedError) a log.jsonl larger than `maxBytes`.
 */
export async function readLogReadOnly(
  dir: string,
  maxBytes: number
): Promise<{ entries: ReadOnlyEntry[]; stopped: string | null }> {
  const index = await open(join(dir, 'log.idx'), 'r')
  try {
    const log = await open(join(dir, 'log.jsonl'), 'r')
    try {
      return await readEntries(index, log, basename(dir), maxBytes)
    } finally {
      await log.close()
    }
  } finally {
    await index.close()
  }
}

async function readEntries(
  index: FileHandle,
  log: FileHandle,
  handle: string,
  maxBytes: number
): Promise<{ entries: ReadOnlyEntry[]; stopped: string | null }> {
  const records = Buffer.alloc(Math.floor((await index.stat()).size / RECORD_BYTES) * RECORD_BYTES)
  const logSize = (await log.stat()).size
  if (logSize > maxBytes)
    throw new ShapeDamagedError(handle, `log.jsonl has ${logSize} bytes, more than the ${maxBytes} read at most`)
  await index.read(records, 0, records.length, 0)
  const entries: ReadOnlyEntry[] = []
  let block = Buffer.alloc(0)
  let blockStart = 0
  let start = 0
  let last: LogOffset = SNAPSHOT_END
  for (let at = 0; at < records.length; at += RECORD_BYTES) {
    const offset = { tx: records.readBigUInt64LE(at), op: records.readUInt32LE(at + 8) }
    const end = Number(records.readBigUInt64LE(at + 12))
    if (offset.tx === 0n || compareOffsets(offset, last) <= 0 || end <= start || end > logSize)
      return { entries, stopped: `entry ${entries.length} of log.idx is not a next entry` }
    if (end > blockStart + block.length) {
      block = Buffer.alloc(Math.max(VERIFY_BLOCK_BYTES, end - start))
      const { bytesRead } = await log.read(block, 0, block.length, start)
      block = block.subarray(0, bytesRead)
      blockStart = start
      if (end > start + bytesRead) return { entries, stopped: `log.jsonl ends before entry ${entries.length}` }
    }
    const line = block.subarray(start - blockStart, end - blockStart)
    if (entryChecksum(records.subarray(at, at + CHECKED_BYTES), line) !== records.readUInt32LE(at + CHECKED_BYTES))
      return { entries, stopped: `entry ${entries.length} (${offset.tx}_${offset.op}) does not match its checksum` }
    entries.push({ offset, line: line.toString('utf8', 0, line.length - 1) })
    last = offset
    start = end
  }
  return { entries, stopped: null }
}
