import { appendFile, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { readLogReadOnly } from '../../src/main/shapes/storage/read-only-log'
import { ShapeLog } from '../../src/main/shapes/storage/shape-log'

const line = (n: number) =>
  JSON.stringify({
    headers: { operation: 'insert', lsn: String(100 + n), op_position: 0 },
    key: `k${n}`,
    value: { n: String(n) }
  })

/** storage's readLogReadOnly: what a time-travel reader sees of a log its server may be writing. */
describe('readLogReadOnly', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-readonly-log-'))
    const log = ShapeLog.create(dir, 1024 * 1024)
    log.append([1, 2, 3].map((n) => ({ offset: { tx: BigInt(100 + n), op: 0 }, line: line(n) })))
    await log.sync()
    log.close()
  })
  afterEach(async () => rm(dir, { recursive: true, force: true }))

  const snapshot = async () => ({
    index: await readFile(join(dir, 'log.idx')),
    log: await readFile(join(dir, 'log.jsonl'))
  })

  it('reads every entry, checked against its checksum', async () => {
    const read = await readLogReadOnly(dir, 1024 * 1024)
    expect(read.stopped).toBeNull()
    expect(read.entries.map((entry) => [entry.offset.tx, entry.line])).toEqual(
      [1, 2, 3].map((n) => [BigInt(100 + n), line(n)])
    )
  })

  it('stops at an entry being appended (half a record, a line without its record) and writes nothing', async () => {
    await appendFile(join(dir, 'log.jsonl'), `${line(4)}\n`)
    await appendFile(join(dir, 'log.idx'), Buffer.alloc(10, 7))
    const before = await snapshot()
    const read = await readLogReadOnly(dir, 1024 * 1024)
    expect(read.entries).toHaveLength(3)
    expect(await snapshot()).toEqual(before)
  })

  it('stops at an entry whose bytes do not match its checksum, naming it', async () => {
    const text = await readFile(join(dir, 'log.jsonl'), 'utf8')
    await writeFile(join(dir, 'log.jsonl'), text.replace('"n":"2"', '"n":"9"'))
    const read = await readLogReadOnly(dir, 1024 * 1024)
    expect(read.entries).toHaveLength(1)
    expect(read.stopped).toBe('entry 1 (102_0) does not match its checksum')
  })

  it('stops where log.jsonl was cut, and refuses a log past its size cap', async () => {
    await truncate(join(dir, 'log.jsonl'), 10)
    expect((await readLogReadOnly(dir, 1024 * 1024)).entries).toHaveLength(0)
    await expect(readLogReadOnly(dir, 5)).rejects.toThrow(/more than the 5 read at most/)
  })
})
