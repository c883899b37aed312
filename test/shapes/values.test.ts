import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { type Message, changes, get, materialise, syncToEnd } from '../support/shape-http'

/** Values as Postgres formats them under the protocol's display settings. */
async function textValues(
  server: TestShapeServer,
  table: string,
  where: string
): Promise<Array<Record<string, string | null>>> {
  const client = await server.pool.connect()
  try {
    await client.query(
      "SET DateStyle = 'ISO, DMY'; SET TimeZone = 'UTC'; SET extra_float_digits = 1; SET bytea_output = 'hex'; SET IntervalStyle = 'iso_8601'"
    )
    const { rows: columns } = await client.query<{ attname: string }>(
      `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      [table]
    )
    const list = columns
      .map(
        (column) =>
          `CASE WHEN "${column.attname}" IS NULL THEN NULL ELSE concat("${column.attname}") END AS "${column.attname}"`
      )
      .join(', ')
    const { rows } = await client.query<Record<string, string | null>>(
      `SELECT ${list} FROM ${table} WHERE ${where} ORDER BY 1`
    )
    return rows
  } finally {
    client.release()
  }
}

describe('values and keys', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 2000 })
    await server.pool.query(`
      CREATE TABLE all_types (
        id bigint PRIMARY KEY, small smallint, num numeric(10,3), real_value real, double_value double precision,
        flag boolean, flags boolean[], label char(5), day date, moment timestamp(3), moment_tz timestamptz, span interval,
        uid uuid, doc json, docb jsonb, blob bytea, ints int[], grid int[][], words text[], status issue_status
      )`)
  })
  afterAll(async () => server?.close())

  const ROW = `(1, -3, 12.5, 1.5, 0.1, true, '{t,f,NULL}', 'ab', '2024-01-02', '2024-01-02 03:04:05.123', '2024-01-02 03:04:05.5+02', '1 year 2 months 3 days 04:05:06',
    'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{"b": 1,  "a": [1,2]}', '{"b": 1,  "a": [1,2]}', '\\x0001fffe', '{1,2,NULL}', '{{1,2},{3,4}}',
    '{"a b","c,d","e\\"f",NULL}', 'in_progress')`

  it('formats every type with Postgres text output, the same in snapshots and live, booleans as true/false', async () => {
    const shape = { table: 'all_types' }
    const synced = await syncToEnd(server.url, shape)
    const live = get(server.url, { ...shape, offset: synced.offset, handle: synced.handle, live: 'true' })
    await server.pool.query(
      `INSERT INTO all_types VALUES ${ROW}, (2, NULL, NULL, 'NaN', '-Infinity', false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`
    )
    const liveRows = changes(await live).map((message) => message.value)
    const snapshotRows = (await syncToEnd(server.url, shape)).messages
      .filter((message: Message) => message.key)
      .map((message) => message.value)
    expect(liveRows).toEqual(snapshotRows)
    const expected = await textValues(server, 'all_types', 'true')
    const booleans = (row: Record<string, string | null>) => ({
      ...row,
      flag: row.flag === 't' ? 'true' : row.flag === 'f' ? 'false' : row.flag
    })
    expect(snapshotRows).toEqual(expected.map(booleans))
    expect(snapshotRows[0]).toMatchObject({
      flag: 'true',
      flags: '{t,f,NULL}',
      label: 'ab   ',
      moment_tz: '2024-01-02 01:04:05.5+00',
      span: 'P1Y2M3DT4H5M6S',
      uid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      doc: '{"b": 1,  "a": [1,2]}',
      docb: '{"a": [1, 2], "b": 1}',
      blob: '\\x0001fffe',
      grid: '{{1,2},{3,4}}',
      words: '{"a b","c,d","e\\"f",NULL}',
      status: 'in_progress'
    })
    expect(snapshotRows[1]).toMatchObject({ small: null, real_value: 'NaN', double_value: '-Infinity', flag: 'false' })
  })

  it('encodes any text the same in snapshots and live: quotes, backslashes, control characters, unicode', async () => {
    await server.pool.query('CREATE TABLE weird_text (id text PRIMARY KEY, note text, flag boolean)')
    const texts = [
      'plain',
      'a "quoted" \\ back\\slash',
      'tab\there\nnew\rline',
      'bell\u0007 vt\u000b ff\f bs\b',
      '\\v not a vertical tab',
      'unicode ☃ 𝄞 é',
      'slash/in/key',
      '\\N',
      ''
    ]
    const shape = { table: 'weird_text' }
    const synced = await syncToEnd(server.url, shape)
    const live = get(server.url, { ...shape, offset: synced.offset, handle: synced.handle, live: 'true' })
    const client = await server.pool.connect()
    try {
      await client.query('BEGIN')
      for (const [index, text] of texts.entries())
        await client.query('INSERT INTO weird_text VALUES ($1, $2, $3)', [`${index}:${text}`, text, index % 2 === 0])
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    const liveMessages = changes(await live).map((message) => [message.key, message.value])
    const snapshotMessages = (await syncToEnd(server.url, shape)).messages
      .filter((message: Message) => message.key)
      .map((message) => [message.key, message.value])
    expect(snapshotMessages).toEqual(liveMessages)
    expect(snapshotMessages.map(([, value]) => (value as Record<string, string>).note)).toEqual(texts)
    expect(snapshotMessages[6]?.[0]).toBe('"public"."weird_text"/"6:slash//in//key"')
    expect(snapshotMessages.map(([, value]) => (value as Record<string, string>).flag)).toEqual(
      texts.map((_, index) => String(index % 2 === 0))
    )
  })

  it('builds keys that never collide for names and values with `.`, `/` and `"`', async () => {
    await server.pool.query(`CREATE SCHEMA "we.ird/s"`)
    await server.pool.query(`CREATE SCHEMA "we.ird/s.ta""b"`)
    await server.pool.query(`CREATE TABLE "we.ird/s"."ta""b.le/x" (a text, b text, PRIMARY KEY (a, b))`)
    await server.pool.query(`CREATE TABLE "we.ird/s.ta""b"."le/x" (a text, b text, PRIMARY KEY (a, b))`)
    const values = [
      ['x/y', 'z'],
      ['x', 'y/z'],
      ['x"/"y', 'z'],
      ['x', '"/"y/z'],
      ['', ''],
      ['x.y', '.']
    ]
    for (const [a, b] of values) await server.pool.query(`INSERT INTO "we.ird/s"."ta""b.le/x" VALUES ($1, $2)`, [a, b])
    for (const [a, b] of values) await server.pool.query(`INSERT INTO "we.ird/s.ta""b"."le/x" VALUES ($1, $2)`, [a, b])
    const first = (await syncToEnd(server.url, { table: '"we.ird/s"."ta""b.le/x"' })).messages.filter(
      (message) => message.key
    )
    const second = (await syncToEnd(server.url, { table: '"we.ird/s.ta""b"."le/x"' })).messages.filter(
      (message) => message.key
    )
    const keys = [...first, ...second].map((message) => message.key)
    expect(new Set(keys).size).toBe(values.length * 2)
    expect(first.map((message) => message.key)).toContain('"we..ird//s"."ta"b..le//x"/"x//y"/"z"')
  })

  it('keys a table without a primary key by every column, NULL as _', async () => {
    await server.pool.query('CREATE TABLE no_key (b text, a text)')
    const shape = { table: 'no_key' }
    const synced = await syncToEnd(server.url, shape)
    const live = get(server.url, { ...shape, offset: synced.offset, handle: synced.handle, live: 'true' })
    await server.pool.query("INSERT INTO no_key VALUES ('2', NULL)")
    const [insert] = changes(await live)
    expect(insert?.key).toBe('"public"."no_key"/_/"2"')
    const rows = materialise(new Map(), (await syncToEnd(server.url, shape)).messages)
    expect([...rows.keys()]).toEqual(['"public"."no_key"/_/"2"'])
  })

  it('shapes a table with a generated column by its other columns, and follows it live', async () => {
    await server.pool.query(
      'CREATE TABLE priced (id int PRIMARY KEY, net numeric, gross numeric GENERATED ALWAYS AS (net * 1.2) STORED)'
    )
    const refused = await get(server.url, { table: 'priced', offset: '-1' })
    expect(refused.status).toBe(400)
    expect((refused.body as { errors: { columns: string[] } }).errors.columns[0]).toMatch(
      /generated and cannot be included.*gross.*columns/
    )
    const shape = { table: 'priced', columns: 'id,net' }
    const synced = await syncToEnd(server.url, shape)
    const live = get(server.url, { ...shape, offset: synced.offset, handle: synced.handle, live: 'true' })
    await server.pool.query('INSERT INTO priced (id, net) VALUES (1, 10)')
    const response = await live
    expect(response.status).toBe(200)
    expect(changes(response).map((change) => change.value)).toEqual([{ id: '1', net: '10' }])
  })
})
