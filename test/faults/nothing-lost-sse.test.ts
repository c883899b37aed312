import { ShapeStream as ElectricStream } from '@electric-sql/client'
import pg from 'pg'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ShapeStream } from '../../src/shared/shape-client'
import { expectClientsMatchPostgres } from '../support/converge'
import { cuttingFetch } from './support/cutting-fetch'
import { ignoreConnectionErrors } from '../support/postgres'
import {
  ITEM_SHAPES as SHAPES,
  type Rows,
  expectedItems as expected,
  sleep,
  writeRandomItems as write
} from '../support/random-writes'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

type AnyMessage = { headers: Record<string, unknown>; key?: string; value?: Record<string, unknown> }

/** A client's copy of its shape, materialised from the messages it was handed; counts every change seen twice. */
class Replica {
  readonly rows: Rows = new Map()
  readonly anomalies: string[] = []
  duplicates = 0
  private readonly seen = new Set<string>()

  apply(list: readonly AnyMessage[]): void {
    for (const message of list) {
      if (message.headers.control === 'must-refetch') {
        this.rows.clear()
        this.seen.clear()
        continue
      }
      const { operation, lsn, op_position: position } = message.headers
      const key = message.key
      if (typeof operation !== 'string' || !key) continue
      if (typeof lsn === 'string') {
        const at = `${lsn}_${String(position)}`
        if (this.seen.has(at)) {
          this.duplicates += 1
          this.anomalies.push(`${operation} ${key} at ${at} received twice`)
        }
        this.seen.add(at)
      }
      if (operation === 'insert' && this.rows.has(key)) this.anomalies.push(`insert of a present ${key}`)
      if (operation !== 'insert' && !this.rows.has(key)) this.anomalies.push(`${operation} of an absent ${key}`)
      const value = Object.fromEntries(
        Object.entries(message.value ?? {}).map(([column, v]) => [column, v === null ? null : String(v)])
      )
      if (operation === 'delete') this.rows.delete(key)
      else this.rows.set(key, { ...this.rows.get(key), ...value })
    }
  }
}

/**
 * SSE responses cut after 1.2–2.5 s: long enough not to look like a buffering proxy, often enough that every client
 * resumes many times during the writes.
 */
const cutAfter = (sseRequests: string[]) => ({ fromMs: 1200, spreadMs: 1300, sseRequests })

describe('nothing lost over SSE', () => {
  let server: TestShapeServer | null = null
  afterEach(async () => {
    await server?.close()
    server = null
    vi.restoreAllMocks()
  })

  it('every SSE client (ours and @electric-sql/client) ends with exactly the rows of its shape, no change twice, no fallback', async () => {
    server = await startTestShapeServer({ headerBrand: 'electric', longPollTimeout: 1000, sseKeepAlive: 500 })
    const warnings: string[] = []
    vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => void warnings.push(args.map(String).join(' ')))
    const setup = new pg.Pool({ connectionString: server.databaseUrl, max: 4 })
    ignoreConnectionErrors(setup)
    await setup.query('CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, val int, note text)')
    await setup.query("INSERT INTO items SELECT g, g % 4, g % 100, 'n' || (g % 30) FROM generate_series(0, 59) g")
    const url = `${server.url}/v1/shape`
    const controller = new AbortController()

    const ours = SHAPES.map((shape, index) => {
      const replica = new Replica()
      const sse: string[] = []
      const stream = new ShapeStream({
        url,
        params: shape,
        live: 'sse',
        fetch: cuttingFetch(index + 1, cutAfter(sse)),
        backoff: { initialDelayMs: 50, maxDelayMs: 200, multiplier: 2 }
      })
      stream.subscribe((batch) => replica.apply(batch.messages))
      void stream.start()
      return {
        kind: 'ours',
        shape,
        replica,
        sse,
        fellBack: () => stream.current.sseFellBack,
        stop: () => stream.stop()
      }
    })
    const official = SHAPES.map((shape, index) => {
      const replica = new Replica()
      const sse: string[] = []
      const params = {
        table: shape.table ?? 'items',
        ...(shape.where ? { where: shape.where } : {}),
        ...(shape.columns ? { columns: shape.columns.split(',') } : {}),
        ...(shape.replica === 'full' ? { replica: 'full' as const } : {})
      }
      const stream = new ElectricStream({
        url,
        params,
        liveSse: true,
        signal: controller.signal,
        fetchClient: cuttingFetch(100 + index, cutAfter(sse))
      })
      stream.subscribe((messages) => replica.apply(messages as AnyMessage[]))
      return {
        kind: 'official',
        shape,
        replica,
        sse,
        fellBack: () => warnings.some((warning) => warning.includes('Falling back to long polling')),
        stop: () => undefined
      }
    })
    const clients = [...ours, ...official]

    // spread over ~6 s, so that every client's SSE connection is cut (and resumed) several times during the writes
    for (let round = 0; round < 6; round++) {
      await Promise.all([write(setup, 25, 7 + round), write(setup, 25, 1001 + round)])
      await sleep(1_000)
    }
    await setup.end()
    const labelOf = (client: (typeof clients)[number]) => `${client.kind} ${JSON.stringify(client.shape)}`
    try {
      await expectClientsMatchPostgres(server.databaseUrl, clients, {
        rows: (client) => client.replica.rows,
        expected: (check, client) => expected(check, client.shape),
        label: labelOf,
        anomalies: (client) => client.replica.anomalies
      })
      for (const client of clients) {
        const label = labelOf(client)
        expect(client.replica.duplicates, label).toBe(0)
        expect(client.fellBack(), label).toBe(false)
        // the stream went live over SSE and resumed there after its connections were cut
        expect(client.sse.length, label).toBeGreaterThan(2)
      }
      expect(warnings.filter((warning) => warning.includes('SSE'))).toEqual([])
    } finally {
      controller.abort()
      for (const client of clients) client.stop()
    }
  })
})
