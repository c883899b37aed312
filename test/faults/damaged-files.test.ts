import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { useTestDatabase } from '../support/test-database'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { expectSyncsMatchTable, followToEnd, tableRows } from './support/follow'

/** The one shape folder of a data folder (`shapes/<database>/shapes/<handle>`). */
function shapeFolder(dataDir: string, handle: string): string {
  const [database] = readdirSync(join(dataDir, 'shapes'))
  return join(dataDir, 'shapes', database ?? '', 'shapes', handle)
}

function overwrite(file: string, at: number, bytes: Buffer): void {
  const content = readFileSync(file)
  bytes.copy(content, Math.min(at, Math.max(0, content.length - bytes.length)))
  writeFileSync(file, content)
}

const lastChunk = (dir: string): string =>
  join(
    dir,
    readdirSync(dir)
      .filter((name) => name.startsWith('snapshot-'))
      .sort()
      .at(-1) ?? 'snapshot-0.jsonl'
  )

const DAMAGES: Array<[string, (dir: string) => void]> = [
  [
    'log.jsonl cut in half',
    (dir) => truncateSync(join(dir, 'log.jsonl'), Math.floor(statSync(join(dir, 'log.jsonl')).size / 2))
  ],
  ['log.jsonl cut to 0 bytes', (dir) => truncateSync(join(dir, 'log.jsonl'), 0)],
  [
    'log.jsonl zeroed',
    (dir) => writeFileSync(join(dir, 'log.jsonl'), Buffer.alloc(statSync(join(dir, 'log.jsonl')).size))
  ],
  [
    'log.jsonl with garbage inside a line',
    (dir) => overwrite(join(dir, 'log.jsonl'), 200, Buffer.from('"x":"garbage"'))
  ],
  ['log.idx with garbage', (dir) => overwrite(join(dir, 'log.idx'), 48, randomBytes(64))],
  ['log.idx cut', (dir) => truncateSync(join(dir, 'log.idx'), Math.floor(statSync(join(dir, 'log.idx')).size / 3))],
  ['log.idx cut to 0 bytes', (dir) => truncateSync(join(dir, 'log.idx'), 0)],
  ['a snapshot chunk cut', (dir) => truncateSync(lastChunk(dir), Math.floor(statSync(lastChunk(dir)).size / 2))],
  ['a snapshot chunk with garbage of the same size', (dir) => overwrite(lastChunk(dir), 100, Buffer.from('{"x":"y"}'))],
  ['meta.json with garbage', (dir) => writeFileSync(join(dir, 'meta.json'), '{"format":')]
]

describe('damaged shape files after a restart', () => {
  const database = useTestDatabase(['CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, body text)'])
  let server: TestShapeServer | null = null
  afterEach(async () => {
    await server?.close()
    server = null
    // every case's data folder has its own slot
    await database.pool.query(
      "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'syncscope_%' AND NOT active"
    )
  })

  it.each(DAMAGES)(
    '%s: the damaged shape answers 409 and a new client gets exactly the rows of Postgres',
    async (_name, damage) => {
      await database.pool.query('TRUNCATE items')
      await database.pool.query(
        "INSERT INTO items SELECT g, g % 3, repeat('snapshot row ' || g, 3) FROM generate_series(1, 150) g"
      )
      const first = await startTestShapeServer({ database: database.url, chunkBytes: 4000, longPollTimeout: 1000 })
      const shape = { table: 'items' }
      const synced = await followToEnd(first.url, shape)
      for (let t = 0; t < 20; t++) {
        await database.pool.query(
          `INSERT INTO items SELECT g, g % 3, 'inserted in ' || ${t} FROM generate_series(${1000 + t * 10}, ${1009 + t * 10}) g`
        )
        await database.pool.query(`UPDATE items SET body = body || ' updated in ${t}' WHERE id % 20 = ${t}`)
        await database.pool.query(`DELETE FROM items WHERE id = ${1 + t * 7}`)
      }
      const before = await tableRows(database.pool, 'items')
      const caughtUp = await followToEnd(first.url, shape, synced)
      expect(caughtUp.rows).toEqual(before)
      const dataDir = first.dataDir
      await first.stop()

      damage(shapeFolder(dataDir, synced.handle))
      server = await startTestShapeServer({ database: database.url, dataDir, chunkBytes: 4000, longPollTimeout: 1000 })
      await database.pool.query("INSERT INTO items VALUES (5000, 1, 'after the restart')")
      const want = await tableRows(database.pool, 'items')

      const fresh = await followToEnd(server.url, shape)
      expect(fresh.handle).not.toBe(synced.handle)
      expect(fresh.rows).toEqual(want)
      // a client that held the shape before goes on from its offset: to a 409, or to exactly the rows of Postgres
      await expectSyncsMatchTable(database.pool, 'items', [{ url: server.url, from: synced }])
    }
  )
})
