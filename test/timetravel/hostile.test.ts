import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { alignWithLog, canonical } from '../../src/main/timetravel/align'
import type { ClientStream, ReceivedRecord } from '../../src/main/timetravel/client-stream'
import { TimeTravelInputError, type LogRecord, type ReadLog } from '../../src/main/timetravel/log'
import { ReplayCursor, rowsAt } from '../../src/main/timetravel/replay'
import { parseShapeUrl } from '../../src/main/timetravel/shape-url'
import { readInputFile } from '../../src/main/timetravel/source'
import { parseTxid } from '../../src/main/timetravel/txid'
import { verifyRecording } from '../../src/main/timetravel/verify'

/** Large enough that quadratic work takes hours, linear work a second. */
const N = 50_000

const update = (index: number): LogRecord => ({
  offset: `${1000 + index}_0`,
  exact: true,
  message: {
    key: `"public"."items"/"${index % 100}"`,
    value: { id: String(index % 100), title: `t${index}` },
    headers: { operation: 'update', lsn: String(1000 + index), op_position: 0, txids: [index] }
  }
})

describe('hostile input: caps, and linear work whatever a recording holds', () => {
  it(`a client stream of ${N.toLocaleString('en')} messages in reverse order is aligned with the log in linear time`, () => {
    const log = Array.from({ length: N }, (_, index) => update(index))
    const received: ReceivedRecord[] = [...log].reverse().map((record) => ({ ...record, request: 1, subset: false }))
    const stream = {
      records: received,
      lastOffset: (log.at(-1) as LogRecord).offset,
      ranges: [{ request: 1, from: '0_inf', to: (log.at(-1) as LogRecord).offset }]
    } as ClientStream
    const anomalies = alignWithLog(stream, log)
    expect(anomalies).toHaveLength(N - 1)
    expect(anomalies.every((anomaly) => anomaly.kind === 'reordered')).toBe(true)
    expect(anomalies[0]?.text).toMatch(/arrived before .*, which the log has before it/)
  }, 60_000)

  it(`rows at points of a ${N.toLocaleString('en')}-message log: each row lists at most 100 of its messages, a later point applies only what is between`, () => {
    const insert = (id: number): LogRecord => ({
      offset: '0_0',
      exact: false,
      message: {
        key: `"public"."items"/"${id}"`,
        value: { id: String(id), title: 'new' },
        headers: { operation: 'insert' }
      }
    })
    const log: ReadLog = {
      source: { kind: 'http', description: 'made up' },
      url: null,
      definition: parseShapeUrl('http://127.0.0.1:9/v1/shape?table=items').definition,
      handle: null,
      server: null,
      records: [
        ...Array.from({ length: 100 }, (_, id) => insert(id)),
        ...Array.from({ length: N }, (_, index) => update(index))
      ],
      end: `${1000 + N - 1}_0`,
      complete: true,
      notes: []
    }
    const cursor = new ReplayCursor(log)
    const end = rowsAt(log, { count: log.records.length }, { start: 98, limit: 5, cursor })
    expect(end).toMatchObject({ rowCount: 100, start: 98 })
    expect(end.rows.map((row) => [row.key, row.originCount, row.origins.length])).toEqual([
      ['"public"."items"/"98"', 1 + N / 100, 100],
      ['"public"."items"/"99"', 1 + N / 100, 100]
    ])
    const [first, second, last] = [end.rows[0]?.origins[0], end.rows[0]?.origins[1], end.rows[0]?.origins.at(-1)]
    expect([first?.operation, first?.index]).toEqual(['insert', 98])
    expect(second?.index).toBe(100 + N - 99 * 100 + 98)
    expect(last?.index).toBe(100 + N - 100 + 98)
    // backwards, then forwards from there: the same as replayed afresh
    expect(rowsAt(log, { count: 150 }, { cursor })).toEqual(rowsAt(log, { count: 150 }))
    expect(rowsAt(log, { count: 40_000 }, { cursor, limit: 3 })).toEqual(rowsAt(log, { count: 40_000 }, { limit: 3 }))
  }, 60_000)

  it('a message nested a hundred thousand levels deep compares without exhausting the stack', () => {
    let deep: unknown = 'bottom'
    for (let level = 0; level < 100_000; level++) deep = { level: deep }
    expect(canonical({ headers: { deep } })).toContain('"…"')
  })

  it('a recording whose body nests past what JSON.parse takes is refused in one line, or read: never a crash', async () => {
    const body = `${'['.repeat(200_000)}${']'.repeat(200_000)}`
    const har = {
      log: {
        entries: [
          {
            startedDateTime: new Date().toISOString(),
            request: { method: 'GET', url: 'http://127.0.0.1:9/v1/shape?table=items&offset=-1', headers: [] },
            response: {
              status: 200,
              headers: [['service-handle', '1-2']].map(([name, value]) => ({ name, value })),
              content: { text: body }
            }
          }
        ]
      }
    }
    await expect(
      verifyRecording('deep.har', JSON.stringify(har), { databaseUrl: null, dataDir: null }).catch((error: unknown) => {
        if (error instanceof TimeTravelInputError) return 'refused'
        throw error
      })
    ).resolves.toBe('refused')
  })

  it('files, URLs and ids past their caps are refused before they are read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-hostile-'))
    try {
      await writeFile(join(dir, 'big.json'), 'x'.repeat(2_000))
      await expect(readInputFile(join(dir, 'big.json'), 1_000)).rejects.toThrow(/larger than 1000 bytes/)
      await expect(readInputFile(dir, 1_000)).rejects.toThrow(/is a folder/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
    expect(() => parseShapeUrl(`http://127.0.0.1/v1/shape?table=items&where=${'x'.repeat(70_000)}`)).toThrow(
      /longer than 65536 characters/
    )
    expect(() => parseTxid('9'.repeat(25))).toThrow(/is not a transaction id/)
    expect(() => parseTxid('18446744073709551616')).toThrow(/3 … 2\^64-1/)
  })
})
