import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listTables } from '../../src/main/db/introspect'
import { readCatalog } from '../../src/main/sql'
import { readTableInfo, TableNotFoundError } from '../../src/main/shapes/definition/table-info'
import { textPool } from '../support/converge'
import { startTestPostgres, type TestPostgres } from '../support/postgres'

const SCHEMA = `
CREATE SCHEMA "Odd ""Schema""";
CREATE TYPE mood AS ENUM ('sad, really', 'ok', 'say "hi"');
CREATE TABLE "Odd ""Schema"""."Mixed Case" (b int4, a text NOT NULL DEFAULT 'x', m mood, tags varchar(20)[], twice int4 GENERATED ALWAYS AS (b * 2) STORED, PRIMARY KEY (a, b));
ALTER TABLE "Odd ""Schema"""."Mixed Case" ADD COLUMN gone int4;
ALTER TABLE "Odd ""Schema"""."Mixed Case" DROP COLUMN gone;
CREATE TABLE empty ();
CREATE TABLE parent (id int8 PRIMARY KEY, at date) PARTITION BY RANGE (id);
CREATE VIEW a_view AS SELECT 1 AS one;
`

/** The one catalog query, as the shape server (its own pool: raw text) and the database page read it. */
describe('catalog: one query for tables and columns', () => {
  let database: TestPostgres
  let text: pg.Pool
  let parsedClient: pg.Client

  beforeAll(async () => {
    database = await startTestPostgres()
    text = textPool(database.url)
    parsedClient = new pg.Client({ connectionString: database.url })
    await parsedClient.connect()
    await parsedClient.query(SCHEMA)
  })
  afterAll(async () => {
    await parsedClient?.end()
    await text?.end()
    await database?.destroy()
  })

  it('reads a quoted, mixed-case table alike through raw-text and parsed connections', async () => {
    for (const db of [text, parsedClient]) {
      const info = await readTableInfo(db, 'Odd "Schema"', 'Mixed Case')
      expect(info.columns.map((column) => column.name)).toEqual(['b', 'a', 'm', 'tags', 'twice'])
      expect(info.keyColumns).toEqual(['a', 'b'])
      expect(info.columns.find((column) => column.name === 'tags')).toMatchObject({
        type: 'varchar',
        isArray: true,
        dims: 1,
        typmod: 24
      })
      expect(info.columns.find((column) => column.name === 'a')).toMatchObject({ notNull: true, pkIndex: 0 })
      expect(info.columns.find((column) => column.name === 'twice')).toMatchObject({ generated: true })
      expect(info.columnTypes.m).toEqual({
        type: 'mood',
        category: 'enum',
        enumLabels: ['sad, really', 'ok', 'say "hi"']
      })
      // generated columns are not replicated, so the fingerprint leaves them out (and never saw the dropped one)
      expect(info.fingerprint).not.toContain('twice')
      expect(info.fingerprint).not.toContain('gone')
    }
  })

  it('reads a table without columns and a partitioned table, and refuses views and missing tables', async () => {
    expect(await readTableInfo(text, 'public', 'empty')).toMatchObject({
      columns: [],
      keyColumns: [],
      hasPrimaryKey: false
    })
    expect(await readTableInfo(text, 'public', 'parent')).toMatchObject({ keyColumns: ['id'], hasPrimaryKey: true })
    await expect(readTableInfo(text, 'public', 'a_view')).rejects.toThrow(TableNotFoundError)
    await expect(readTableInfo(text, 'public', 'nope')).rejects.toThrow('Table "public"."nope" does not exist')
    expect(await readCatalog(text, { schema: 'public', name: 'Empty' })).toBeNull()
  })

  it('lists every user table for the database page from the same query', async () => {
    const tables = await listTables(text)
    expect(tables.map((table) => table.qualifiedName).sort()).toEqual([
      '"Odd ""Schema"""."Mixed Case"',
      'empty',
      'parent'
    ])
    const mixed = tables.find((table) => table.name === 'Mixed Case')
    expect(mixed?.primaryKey).toEqual(['b', 'a'])
    expect(mixed?.columns.find((column) => column.name === 'a')).toEqual({
      name: 'a',
      type: 'text',
      nullable: false,
      isPrimaryKey: true,
      default: "'x'::text"
    })
    expect(mixed?.columns.find((column) => column.name === 'tags')).toMatchObject({
      type: 'character varying(20)[]',
      nullable: true,
      isPrimaryKey: false
    })
    expect(tables.find((table) => table.name === 'empty')).toMatchObject({ columns: [], primaryKey: [], rowCount: 0 })
  })
})
