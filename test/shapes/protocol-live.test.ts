import { describe, expect, it } from 'vitest'
import { describeEachBrand, LONG_POLL_MS } from '../support/branded-shape-api'
import { type Message, changes, controls, syncToEnd } from '../support/shape-http'

describeEachBrand((api) => {
  const { brand, fetchShape, sql } = api

  describe('live', () => {
    /**
     * Follows a shape's live log from `from`: `next()` gives the changes of the next live answer that has any (a
     * long-poll that times out first, a commit slowed down by the disk traffic of other test files, is asked again from
     * where it left off); `offset` is where it stands.
     */
    function livePoller(shape: Record<string, string>, handle: string, from: string) {
      const poller = {
        offset: from,
        async next() {
          const deadline = Date.now() + 20_000
          for (;;) {
            const response = await fetchShape({ ...shape, offset: poller.offset, handle, live: 'true' })
            expect(response.status).toBe(200)
            poller.offset = response.header('@offset') ?? poller.offset
            const found = changes(response)
            if (found.length > 0 || Date.now() > deadline) return found
          }
        }
      }
      return poller
    }

    async function followLive(shape: Record<string, string>) {
      const synced = await syncToEnd(api.server.url, shape, brand)
      return { handle: synced.handle, offset: synced.offset, synced }
    }

    it("answers offset=now only once the new shape's snapshot is taken, so a change committed after the answer is in its log", async () => {
      const shape = { table: 'issues', where: 'id = 4', log: 'changes_only', replica: 'full' }
      await fetchShape({ table: 'issues', where: 'id = 5', offset: '-1' }) // the table is followed already: no publication change below
      const snapshotWaiting = async () =>
        (
          await sql(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'syncscope-shapes' AND wait_event_type = 'Lock'"
          )
        ).rows
      const locker = await api.server.pool.connect()
      try {
        await locker.query('BEGIN')
        await locker.query('LOCK TABLE issues IN ACCESS EXCLUSIVE MODE')
        const answer = fetchShape({ ...shape, offset: 'now' })
        let answered = false
        void answer.then(() => (answered = true))
        await expect.poll(snapshotWaiting, { timeout: 10_000, interval: 50 }).not.toHaveLength(0)
        // Answered now, a change committed before the snapshot (which then sees it) would be lost to this client: a
        // request sent after it is answered while it is still held
        expect((await fetch(`${api.server.url}/v1/health`)).status).toBe(200)
        expect(answered).toBe(false)
        await locker.query('COMMIT')
        const response = await answer
        expect(response.status).toBe(200)
        await sql(`UPDATE issues SET title = 'committed after the now answer' WHERE id = 4`)
        const found = await livePoller(shape, response.header('@handle') ?? '', response.header('@offset') ?? '').next()
        expect(found.map((change) => change.value?.title)).toEqual(['committed after the now answer'])
      } finally {
        await locker.query('ROLLBACK')
        locker.release()
      }
    })

    it('answers a long-poll timeout with 200 and only up-to-date', async () => {
      const { handle, offset } = await followLive({ table: 'users', where: "email = 'nobody@example.com'" })
      const started = Date.now()
      const response = await fetchShape({
        table: 'users',
        where: "email = 'nobody@example.com'",
        offset,
        handle,
        live: 'true',
        cursor: '0'
      })
      expect(Date.now() - started).toBeGreaterThanOrEqual(LONG_POLL_MS - 100)
      expect(response.status).toBe(200)
      expect(controls(response)).toEqual(['up-to-date'])
      expect(response.header('@offset')).toBe(offset)
      expect(response.header('@has-data')).toBe('false')
      expect(response.header('@cursor')).toMatch(/^\d+$/)
      expect(response.header('cache-control')).toBe('public, max-age=5, stale-while-revalidate=5')
      expect(response.header('@schema')).toBeNull()
      const cursor = response.header('@cursor') ?? ''
      const next = await fetchShape({
        table: 'users',
        where: "email = 'nobody@example.com'",
        offset,
        handle,
        live: 'true',
        cursor
      })
      expect(Number(next.header('@cursor'))).toBeGreaterThan(Number(cursor))
    })

    it('delivers inserts, updates and deletes, and rows moving in and out of the where', async () => {
      const shape = { table: 'issues', columns: 'id,title,priority,project_id', where: 'priority = 5 AND id > 9000' }
      const live = await followLive(shape)
      const poller = livePoller(shape, live.handle, live.offset)
      const poll = () => poller.next()
      const pending = poll()
      await sql(
        "INSERT INTO issues (id, project_id, title, priority) VALUES (9001, 1000000001, 'a', 5), (9002, 1000000001, 'b', 1)"
      )
      const inserted = await pending
      expect(inserted.map((change) => [change.headers.operation, change.key])).toEqual([
        ['insert', '"public"."issues"/"9001"']
      ])
      expect(inserted[0]?.headers).toMatchObject({
        relation: ['public', 'issues'],
        lsn: expect.stringMatching(/^\d+$/),
        op_position: 0,
        last: true,
        txids: [expect.any(Number)]
      })
      expect(poller.offset).toBe(`${inserted[0]?.headers.lsn as string}_0`)

      const moves = poll()
      await sql('BEGIN')
      await sql("UPDATE issues SET title = 'a2' WHERE id = 9001")
      await sql('UPDATE issues SET priority = 5 WHERE id = 9002')
      await sql('UPDATE issues SET priority = 4 WHERE id = 9001')
      await sql('COMMIT')
      const moved = await moves
      expect(moved.map((change) => [change.headers.operation, change.key, change.value])).toEqual([
        ['update', '"public"."issues"/"9001"', { id: '9001', title: 'a2' }],
        ['insert', '"public"."issues"/"9002"', { id: '9002', title: 'b', priority: '5', project_id: '1000000001' }],
        ['delete', '"public"."issues"/"9001"', { id: '9001' }]
      ])
      expect(moved.map((change) => change.headers.op_position)).toEqual([0, 2, 4])
      expect(moved.map((change) => change.headers.last ?? false)).toEqual([false, false, true])

      const untouched = poll()
      await sql("UPDATE issues SET body = 'not selected' WHERE id = 9002")
      await sql('DELETE FROM issues WHERE id = 9002')
      expect((await untouched).map((change) => [change.headers.operation, change.value])).toEqual([
        ['delete', { id: '9002' }]
      ])
    })

    it('replica=full sends whole rows with old values, and a key change as delete + insert', async () => {
      const shape = {
        table: 'issues',
        columns: 'id,title,priority,project_id',
        where: 'id BETWEEN 9100 AND 9199',
        replica: 'full'
      }
      await sql("INSERT INTO issues (id, project_id, title) VALUES (9100, 1000000001, 'full')")
      const live = await followLive(shape)
      const poller = livePoller(shape, live.handle, live.offset)
      const poll = () => poller.next()
      const updated = poll()
      await sql('UPDATE issues SET priority = 1 WHERE id = 9100')
      expect((await updated).map((change) => [change.headers.operation, change.value, change.old_value])).toEqual([
        ['update', { id: '9100', title: 'full', priority: '1', project_id: '1000000001' }, { priority: '3' }]
      ])
      const rekeyed = poll()
      await sql('UPDATE issues SET id = 9101 WHERE id = 9100')
      const pair = await rekeyed
      expect(pair.map((change) => [change.headers.operation, change.key])).toEqual([
        ['delete', '"public"."issues"/"9100"'],
        ['insert', '"public"."issues"/"9101"']
      ])
      expect(pair[0]?.headers.key_change_to).toBe('"public"."issues"/"9101"')
      expect(pair[1]?.headers.key_change_from).toBe('"public"."issues"/"9100"')
      expect(pair[0]?.value).toEqual({ id: '9100', title: 'full', priority: '1', project_id: '1000000001' })
      expect(pair.map((change) => change.headers.op_position)).toEqual([0, 1])
    })

    it('streams SSE: data frames, up-to-date with the batch LSN, keep-alive comments', async () => {
      const shape = { table: 'issues', columns: 'id,title', where: 'id BETWEEN 9200 AND 9299' }
      const { handle, offset } = await followLive(shape)
      const controller = new AbortController()
      const response = await fetch(
        new URL(
          `/v1/shape?${new URLSearchParams({ ...shape, offset, handle, live: 'true', live_sse: 'true' })}`,
          api.server.url
        ),
        {
          signal: controller.signal
        }
      )
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('text/event-stream')
      expect(response.headers.get('cache-control')).toBe('public, max-age=59')
      const reader = response.body!.getReader()
      let text = ''
      const readUntil = async (pattern: RegExp) => {
        while (!pattern.test(text)) {
          const { value, done } = await reader.read()
          if (done) throw new Error(`stream ended before ${pattern}: ${text}`)
          text += new TextDecoder().decode(value)
        }
      }
      await readUntil(/: keep-alive\n\n/)
      await sql("INSERT INTO issues (id, project_id, title) VALUES (9200, 1000000001, 'sse')")
      await readUntil(/"control":"up-to-date"[^\n]*\n\n/)
      controller.abort()
      const frames = text.split('\n\n').filter((frame) => frame.startsWith('data: '))
      const parsed = frames.map((frame) => JSON.parse(frame.slice(6)) as Message)
      expect(parsed[0]).toMatchObject({
        headers: { operation: 'insert' },
        key: '"public"."issues"/"9200"',
        value: { id: '9200', title: 'sse' }
      })
      expect(parsed[1]?.headers).toEqual({ control: 'up-to-date', global_last_seen_lsn: parsed[0]?.headers.lsn })
    })
  })
})
