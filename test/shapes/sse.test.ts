import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { type Message, shapeUrl, syncToEnd } from '../support/shape-http'

/** One SSE response read as it arrives: its data frames (with the time each came) and whether it ended. */
function openSse(base: string, params: Record<string, string>) {
  const controller = new AbortController()
  const frames: Array<{ message: Message; at: number }> = []
  let ended = false
  let text = ''
  const opened = fetch(shapeUrl(base, { ...params, live: 'true', live_sse: 'true' }), { signal: controller.signal })
  const done = (async () => {
    const response = await opened
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    for (;;) {
      const { value, done: finished } = await reader.read()
      if (finished) break
      text += decoder.decode(value, { stream: true })
      let end: number
      while ((end = text.indexOf('\n\n')) !== -1) {
        const frame = text.slice(0, end)
        text = text.slice(end + 2)
        if (frame.startsWith('data: ')) frames.push({ message: JSON.parse(frame.slice(6)) as Message, at: Date.now() })
      }
    }
    ended = true
  })().catch(() => undefined)
  return {
    opened,
    frames,
    get ended() {
      return ended
    },
    changes: () => frames.filter((frame) => 'operation' in frame.message.headers).map((frame) => frame.message),
    close: async () => {
      controller.abort()
      await done
    }
  }
}

const isUpToDate = (message: Message) => message.headers.control === 'up-to-date'

/**
 * How long a change may take to arrive "at once": far below the 21 s keep-alive a late change would hide behind, far
 * above what a loaded machine needs.
 */
const AT_ONCE = { timeout: 10_000, interval: 20 }

/** All `changes` of one transaction arrive, then one up-to-date and no other before it. */
async function expectWholeTransaction(stream: ReturnType<typeof openSse>, changes: number): Promise<void> {
  await expect.poll(() => stream.changes().length, AT_ONCE).toBe(changes)
  await expect.poll(() => stream.frames.some((frame) => isUpToDate(frame.message)), AT_ONCE).toBe(true)
  expect(stream.frames.findIndex((frame) => isUpToDate(frame.message))).toBe(changes)
  expect(stream.frames.filter((frame) => isUpToDate(frame.message))).toHaveLength(1)
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('SSE live mode', () => {
  let server: TestShapeServer
  const sql = (text: string, values: unknown[] = []) => server.pool.query(text, values)

  beforeAll(async () => {
    // keep-alives as the default (21 s): a late change would otherwise hide behind one
    server = await startTestShapeServer({ chunkBytes: 1000 })
    await sql('CREATE TABLE sse_items (id int PRIMARY KEY, grp int NOT NULL, note text)')
  })
  afterAll(async () => server?.close())

  it('sends every change of a burst of separate commits at once (no wake-up is lost while the log is read)', async () => {
    const shape = { table: 'sse_items', where: 'grp = 1' }
    const { handle, offset } = await syncToEnd(server.url, shape)
    const stream = openSse(server.url, { ...shape, handle, offset })
    await stream.opened
    try {
      let id = 0
      for (let burst = 0; burst < 12; burst++) {
        const ids = [id + 1, id + 2, id + 3, id + 4]
        id += 4
        await Promise.all(ids.map((row) => sql('INSERT INTO sse_items VALUES ($1, 1, $2)', [row, 'burst'])))
        await expect.poll(() => stream.changes().length, { ...AT_ONCE, message: `burst ${burst}` }).toBe(id)
      }
    } finally {
      await stream.close()
    }
  })

  it('sends each change once and in order to hundreds of streams of one shape (written by two threads), a large one too', async () => {
    const shape = { table: 'sse_items', where: 'grp = 6' }
    const { handle, offset } = await syncToEnd(server.url, shape)
    const streams = Array.from({ length: 300 }, () => openSse(server.url, { ...shape, handle, offset }))
    await Promise.all(streams.map((stream) => stream.opened))
    try {
      await sql('INSERT INTO sse_items VALUES (6001, 6, $1)', ['small'])
      await sql("INSERT INTO sse_items SELECT g, 6, repeat('z', 5000) FROM generate_series(6002, 6041) g")
      await sql('UPDATE sse_items SET note = $1 WHERE id = 6001', ['changed'])
      const expected = [...Array.from({ length: 41 }, (_, i) => `insert ${6001 + i}`), 'update 6001']
      const seen = (stream: ReturnType<typeof openSse>) =>
        stream
          .changes()
          .map(
            (change) => `${String(change.headers.operation)} ${JSON.parse((change.key ?? '').split('/')[1] ?? '""')}`
          )
      await expect
        .poll(() => streams.filter((stream) => seen(stream).length >= expected.length).length, {
          timeout: 10_000,
          interval: 50
        })
        .toBe(300)
      for (const stream of streams) expect(seen(stream)).toEqual(expected)
    } finally {
      await Promise.all(streams.map((stream) => stream.close()))
    }
  })

  it('streams a transaction larger than a chunk at once, with up-to-date only after its last change', async () => {
    const shape = { table: 'sse_items', where: 'grp = 2' }
    const { handle, offset } = await syncToEnd(server.url, shape)
    const stream = openSse(server.url, { ...shape, handle, offset })
    await stream.opened
    try {
      await sql("INSERT INTO sse_items SELECT g, 2, repeat('x', 100) FROM generate_series(1001, 1030) g")
      await expectWholeTransaction(stream, 30)
    } finally {
      await stream.close()
    }
  })

  it('sends up-to-date only at the end of a transaction when the stream starts behind one larger than a chunk', async () => {
    const shape = { table: 'sse_items', where: 'grp = 3' }
    const { handle, offset } = await syncToEnd(server.url, shape)
    await sql("INSERT INTO sse_items SELECT g, 3, repeat('y', 100) FROM generate_series(2001, 2030) g")
    await expect
      .poll(async () => (await syncToEnd(server.url, shape)).messages.filter((m) => m.headers.operation).length, {
        timeout: 5_000
      })
      .toBe(30)
    const stream = openSse(server.url, { ...shape, handle, offset })
    try {
      await expectWholeTransaction(stream, 30)
    } finally {
      await stream.close()
    }
  })

  it('resuming at <lsn>_0 of the last up-to-date sends nothing again and keeps the stream open', async () => {
    const shape = { table: 'sse_items', where: 'grp = 4' }
    const { handle, offset } = await syncToEnd(server.url, shape)
    const first = openSse(server.url, { ...shape, handle, offset })
    await first.opened
    let resumeAt: string
    try {
      await sql('INSERT INTO sse_items VALUES (3001, 4, $1), (3002, 4, $1), (3003, 4, $1)', ['tx'])
      await expect.poll(() => first.frames.find((frame) => isUpToDate(frame.message)), AT_ONCE).toBeDefined()
      resumeAt = `${String(first.frames.find((frame) => isUpToDate(frame.message))?.message.headers.global_last_seen_lsn)}_0`
      expect(first.changes()).toHaveLength(3)
    } finally {
      await first.close()
    }
    // as @electric-sql/client resumes: from `<global_last_seen_lsn>_0` of the last up-to-date it processed
    const resumed = openSse(server.url, { ...shape, handle, offset: resumeAt })
    try {
      await resumed.opened
      expect(resumed.ended).toBe(false)
      // the next change comes alone: anything sent again would have come before it, on the same stream
      await sql('INSERT INTO sse_items VALUES (3004, 4, $1)', ['next'])
      await expect
        .poll(() => resumed.changes().map((change) => change.key), AT_ONCE)
        .toEqual(['"public"."sse_items"/"3004"'])
      expect(resumed.ended).toBe(false)
    } finally {
      await resumed.close()
    }
  })

  it('a long-poll at <lsn>_0 after a multi-row transaction (a paused SSE client going on) gets none of it again', async () => {
    const shape = { table: 'sse_items', where: 'grp = 5' }
    const { handle, offset } = await syncToEnd(server.url, shape)
    await sql('INSERT INTO sse_items VALUES (4001, 5, $1), (4002, 5, $1)', ['tx'])
    const synced = await (async () => {
      for (;;) {
        const result = await syncToEnd(server.url, shape)
        if (result.messages.some((message) => message.headers.operation)) return result
        await sleep(50)
      }
    })()
    const lsn = synced.messages.find((message) => message.headers.operation)?.headers.lsn
    const response = await fetch(shapeUrl(server.url, { ...shape, handle, offset: `${String(lsn)}_0` }))
    const body = (await response.json()) as Message[]
    expect(body.filter((message) => message.headers.operation)).toEqual([])
    expect(offset).not.toBe(`${String(lsn)}_0`)
  })
})
