import { readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { useTestDatabase } from '../support/test-database'
import { startTestShapeServer } from '../support/shape-server'
import { expectSyncsMatchTable, followToEnd } from './support/follow'

const stateFile = (dataDir: string): string => {
  const [database] = readdirSync(join(dataDir, 'shapes'))
  return join(dataDir, 'shapes', database ?? '', 'state.json')
}

const slotOf = (dataDir: string): string =>
  (JSON.parse(readFileSync(stateFile(dataDir), 'utf8')) as { slotName: string }).slotName

describe('an unreadable state.json', () => {
  const database = useTestDatabase([
    'CREATE TABLE notes (id int PRIMARY KEY, body text)',
    "INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 20) g"
  ])

  const slots = async (): Promise<Array<{ slot_name: string; active: boolean }>> =>
    (
      await database.pool.query<{ slot_name: string; active: boolean }>(
        "SELECT slot_name, active FROM pg_replication_slots WHERE slot_name LIKE 'syncscope_%' ORDER BY slot_name"
      )
    ).rows
  const publications = async (): Promise<string[]> =>
    (
      await database.pool.query<{ pubname: string }>(
        "SELECT pubname FROM pg_publication WHERE pubname LIKE 'syncscope_%' ORDER BY pubname"
      )
    ).rows.map((row) => row.pubname)

  it.each([
    ['garbage', (file: string) => writeFileSync(file, '{"systemId": 12')],
    ['0 bytes', (file: string) => truncateSync(file, 0)]
  ])(
    '(%s) drops the slot and publication of its own folder, never the one of another folder in use',
    async (_name, damage) => {
      const other = await startTestShapeServer({ database: database.url, longPollTimeout: 1000 })
      const first = await startTestShapeServer({ database: database.url, longPollTimeout: 1000 })
      try {
        await followToEnd(other.url, { table: 'notes' })
        const synced = await followToEnd(first.url, { table: 'notes' })
        const ownSlot = slotOf(first.dataDir)
        const otherSlot = slotOf(other.dataDir)
        expect((await slots()).map((slot) => slot.slot_name).sort()).toEqual([ownSlot, otherSlot].sort())
        await first.stop()

        damage(stateFile(first.dataDir))
        const second = await startTestShapeServer({
          database: database.url,
          dataDir: first.dataDir,
          longPollTimeout: 1000
        })
        try {
          // one slot and one publication per data folder: the old slot of the reset folder holds no WAL any more
          const newSlot = slotOf(first.dataDir)
          expect((await slots()).map((slot) => slot.slot_name).sort()).toEqual([newSlot, otherSlot].sort())
          expect((await slots()).find((slot) => slot.slot_name === otherSlot)?.active).toBe(true)
          expect(await publications()).toEqual([newSlot, otherSlot].sort())
          // the shapes of the reset folder are gone: the old handle gets 409, a fresh sync the rows and live changes
          const resumed = await followToEnd(second.url, { table: 'notes' }, synced)
          expect(resumed.statuses[0]).toBe(409)
          await database.pool.query("INSERT INTO notes VALUES (100, 'after the reset')")
          await expectSyncsMatchTable(database.pool, 'notes', [{ url: second.url, from: resumed }, { url: other.url }])
        } finally {
          await second.close()
        }
      } finally {
        await first.close()
        await other.close()
        await database.pool.query(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'syncscope_%' AND NOT active"
        )
        await database.pool.query('DELETE FROM notes WHERE id = 100')
        for (const name of await publications()) await database.pool.query(`DROP PUBLICATION ${name}`)
      }
    }
  )
})
