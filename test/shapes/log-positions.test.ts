import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { formatOffset, readPosition } from '../../src/main/shapes/storage/offset'
import { ShapeLog } from '../../src/main/shapes/storage/shape-log'
import { sseFrames } from '../../src/main/shapes/live/sse'

describe('log positions and SSE framing', () => {
  let dir = ''
  afterEach(async () => dir && rm(dir, { recursive: true, force: true }))

  const line = (n: number, size: number) => JSON.stringify({ n, pad: 'x'.repeat(size) })

  it('never ends a read right after op 0 of a transaction that goes on, so <lsn>_0 always means its end', async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-log-'))
    const log = ShapeLog.create(dir, 1000)
    log.append([{ offset: { tx: 10n, op: 0 }, line: line(1, 10) }])
    // op 0 alone crosses the chunk size: the chunk would end right after it
    log.append([
      { offset: { tx: 20n, op: 0 }, line: line(2, 1200) },
      { offset: { tx: 20n, op: 2 }, line: line(3, 10) },
      { offset: { tx: 20n, op: 4 }, line: line(4, 10) }
    ])
    const first = await log.readAfter({ tx: 10n, op: 0 })
    expect(formatOffset(first!.end)).toBe('20_2')
    // the end of transaction 20 as an SSE client names it: nothing of it again
    expect(await log.readAfter(readPosition({ tx: 20n, op: 0 }))).toBeNull()
    // a single-change transaction ends at op 0: the same position either way
    expect(formatOffset((await log.readAfter(readPosition({ tx: 10n, op: 0 })))!.end)).toBe('20_2')
    expect(readPosition({ tx: 0n, op: 0 })).toEqual({ tx: 0n, op: 0 })
  })

  it('frames every message of a slice as one data event, and the up-to-date after them', () => {
    const slice = { lines: Buffer.from('{"a":1}\n{"b":2}'), end: { tx: 42n, op: 2 } }
    const framed = sseFrames(slice, true)
    expect(framed.payload.toString()).toBe(
      'data: {"a":1}\n\ndata: {"b":2}\n\ndata: {"headers":{"control":"up-to-date","global_last_seen_lsn":"42"}}\n\n'
    )
    expect(framed.wire.toString()).toBe(`${framed.payload.length.toString(16)}\r\n${framed.payload.toString()}\r\n`)
    expect(sseFrames({ lines: Buffer.from('{"c":3}'), end: slice.end }, false).payload.toString()).toBe(
      'data: {"c":3}\n\n'
    )
  })
})
