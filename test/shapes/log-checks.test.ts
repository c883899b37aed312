import { mkdtemp, open, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type LogRange, ShapeDamagedError, ShapeLog } from '../../src/main/shapes/storage/shape-log'

/** The checks behind the catch-up reads served straight from log.jsonl (shared in memory, or streamed when too big). */
describe('checking a range of the main log read from disk', () => {
  let dir = ''
  afterEach(async () => dir && rm(dir, { recursive: true, force: true }))

  async function logOfThreeTransactions(): Promise<ShapeLog> {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-log-'))
    const log = ShapeLog.create(dir, 1_000_000)
    for (let tx = 1n; tx <= 3n; tx++) {
      log.append(
        [0, 2, 4].map((op) => ({
          offset: { tx: tx * 10n, op },
          line: JSON.stringify({ tx: String(tx), op, value: 'v'.repeat(40) })
        }))
      )
    }
    return log
  }

  function rangeAfter(log: ShapeLog, offset: { tx: bigint; op: number }): LogRange {
    const range = log.rangeAfter(offset)
    if (!range) throw new Error('no range')
    return range
  }

  /** The bytes of a range, as a catch-up read takes them from the file. */
  async function rangeBytes(log: ShapeLog, range: LogRange): Promise<Buffer> {
    return (await readFile(log.logPath)).subarray(range.start, range.start + range.length)
  }

  async function flipByte(path: string, position: number): Promise<void> {
    const file = await open(path, 'r+')
    const byte = Buffer.alloc(1)
    await file.read(byte, 0, 1, position)
    byte[0] = (byte[0] as number) ^ 0x01
    await file.write(byte, 0, 1, position)
    await file.close()
  }

  it('passes an intact range, from the start and from the middle of the log', async () => {
    const log = await logOfThreeTransactions()
    for (const offset of [
      { tx: 0n, op: 0 },
      { tx: 10n, op: 4 },
      { tx: 20n, op: 2 }
    ]) {
      const range = rangeAfter(log, offset)
      expect(() => log.checkRange(range, Buffer.alloc(0))).toThrow(ShapeDamagedError)
      const bytes = await rangeBytes(log, range)
      expect(() => log.checkRange(range, bytes)).not.toThrow()
      await expect(log.checkRangeOnDisk(range)).resolves.toBeUndefined()
    }
  })

  it('checks a range as it was taken while the log grows (a read racing an append is not damage)', async () => {
    const log = await logOfThreeTransactions()
    const range = rangeAfter(log, { tx: 20n, op: 4 })
    const bytes = await rangeBytes(log, range)
    log.append([{ offset: { tx: 40n, op: 0 }, line: JSON.stringify({ tx: '4', value: 'appended meanwhile' }) }])
    expect(() => log.checkRange(range, bytes)).not.toThrow()
    await expect(log.checkRangeOnDisk(range)).resolves.toBeUndefined()
  })

  it('refuses a range with one byte changed, in memory and on disk', async () => {
    const log = await logOfThreeTransactions()
    const range = rangeAfter(log, { tx: 10n, op: 4 })
    await flipByte(log.logPath, range.start + 70)
    expect(() => log.checkRange(range, Buffer.alloc(0))).toThrow(ShapeDamagedError)
    const bytes = await rangeBytes(log, range)
    expect(() => log.checkRange(range, bytes)).toThrow(/does not match its checksum/)
    await expect(log.checkRangeOnDisk(range)).rejects.toThrow(ShapeDamagedError)
  })

  it('refuses a range the file no longer holds whole (cut short)', async () => {
    const log = await logOfThreeTransactions()
    const range = rangeAfter(log, { tx: 0n, op: 0 })
    const bytes = await rangeBytes(log, range)
    expect(() => log.checkRange(range, bytes.subarray(0, bytes.length - 5))).toThrow(/log.jsonl ends at/)
    const file = await open(log.logPath, 'r+')
    await file.truncate(bytes.length - 30)
    await file.close()
    await expect(log.checkRangeOnDisk(range)).rejects.toThrow(/log.jsonl ends at/)
  })
})
