/**
 * Target 1's row stage two ways, on target 1's table: the shape server's path (COPY read off the socket by CopyOut,
 * lines encoded by the WebAssembly CopyEncoder) against the reference's (Postgres builds each row's JSON line in the
 * query; here read through a cursor, a text column per row). Reports rows/s of each in rounds and whether both give
 * the same bytes. Everything after this stage (chunk files, HTTP) is the same for both.
 *
 * Run: node --expose-gc --import tsx bench/json-in-sql.ts [rows=1000000] [rounds=5]
 */
import { crc32 } from 'node:zlib'
import pg from 'pg'
import { type ResolvedShape, resolveDefinition } from '../src/main/shapes/definition/definition'
import { selectRowsSql, setSessionSettingsSql } from '../src/main/shapes/definition/row-sql'
import { readTableInfo } from '../src/main/shapes/definition/table-info'
import { CopyEncoder } from '../src/main/shapes/snapshot/copy-encoder'
import { CopyOut } from '../src/main/shapes/snapshot/copy-out'
import { InsertEncoder, isBoolColumn } from '../src/main/shapes/storage/messages'
import { loadParser, quoteIdent } from '../src/main/sql'
import { startTestPostgres } from '../test/support/postgres'

const [ROWS = 1_000_000, ROUNDS = 5] = process.argv.slice(2).map(Number)
const FETCH_ROWS = 10_000

interface Run {
  rows: number
  bytes: number
  crc: number
  rate: number
}

const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`

/** The insert message of each row as one text value built by Postgres, byte for byte what InsertEncoder writes. */
function jsonLineSql(definition: ResolvedShape): string {
  const { table } = definition
  const general = new InsertEncoder(definition)
  const text = (column: string) => `${quoteIdent(column)}::text`
  const keyPart = (column: string) => `COALESCE('"' || replace(${text(column)}, '/', '//') || '"', '_')`
  const key = `to_json(${sqlString(general.keyStart)} || ${table.keyColumns.map(keyPart).join(` || '/' || `)})::text`
  const value = (column: string) => {
    const json = isBoolColumn(table, column)
      ? `to_json(CASE WHEN ${quoteIdent(column)} THEN 'true' ELSE 'false' END)::text`
      : `to_json(${text(column)})::text`
    return `${sqlString(`${JSON.stringify(column)}:`)} || COALESCE(${json}, 'null')`
  }
  const values = definition.columns.map(value).join(` || ',' || `)
  return `SELECT ${sqlString(general.prefix)} || ${key} || ',"value":{' || ${values} || '}}' AS line FROM ${quoteIdent(table.schema)}.${quoteIdent(table.name)}`
}

async function inDisplaySettings<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    await client.query(setSessionSettingsSql())
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } finally {
    client.release()
  }
}

function encoderRun(pool: pg.Pool, definition: ResolvedShape): Promise<Run> {
  return inDisplaySettings(pool, async (client) => {
    const start = performance.now()
    const encoder = new CopyEncoder(definition)
    let rows = 0
    let bytes = 0
    let crc = 0
    const copy = client.query(new CopyOut(`COPY (${selectRowsSql(definition.table, encoder.columns, null)}) TO STDOUT`))
    for await (const lines of copy.batches()) {
      const encoded = encoder.encode(lines)
      rows += encoded.rowEnds.length
      bytes += encoded.data.length
      crc = crc32(encoded.data, crc)
    }
    return { rows, bytes, crc, rate: rows / ((performance.now() - start) / 1000) }
  })
}

function sqlRun(pool: pg.Pool, definition: ResolvedShape): Promise<Run> {
  return inDisplaySettings(pool, async (client) => {
    const start = performance.now()
    await client.query(`DECLARE lines NO SCROLL CURSOR FOR ${jsonLineSql(definition)}`)
    let rows = 0
    let bytes = 0
    let crc = 0
    for (;;) {
      const result = await client.query<[string]>({ text: `FETCH ${FETCH_ROWS} FROM lines`, rowMode: 'array' })
      if (result.rows.length === 0) break
      const data = Buffer.from(result.rows.map(([line]) => `${line}\n`).join(''))
      rows += result.rows.length
      bytes += data.length
      crc = crc32(data, crc)
    }
    return { rows, bytes, crc, rate: rows / ((performance.now() - start) / 1000) }
  })
}

const rate = (value: number): string => Math.round(value).toLocaleString('en')
const range = (values: number[]): string => `${rate(Math.min(...values))}–${rate(Math.max(...values))}`
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN

async function main(): Promise<void> {
  const postgres = await startTestPostgres()
  const pool = new pg.Pool({
    connectionString: postgres.url,
    max: 2,
    types: { getTypeParser: () => (value: string) => value }
  })
  try {
    await pool.query(
      'CREATE TABLE big (id bigint PRIMARY KEY, owner int NOT NULL, title text, amount numeric(12,2), done boolean, created timestamptz)'
    )
    await pool.query(
      `INSERT INTO big SELECT g, g % 1000, 'row ' || g || ' of the benchmark', (g % 10000) / 7.0, g % 3 = 0, timestamptz '2025-01-01' + g * interval '1 second' FROM generate_series(1, ${ROWS}) g`
    )
    await pool.query('VACUUM ANALYZE big')
    await loadParser()
    const input = {
      table: 'big',
      columns: null,
      queryableColumns: null,
      where: null,
      params: {},
      replica: 'default' as const,
      log: 'full' as const
    }
    const definition = await resolveDefinition(input, (schema, name) => readTableInfo(pool, schema, name))
    // one warm-up round of each, not counted
    const [warmEncoder, warmSql] = [await encoderRun(pool, definition), await sqlRun(pool, definition)]
    const identical =
      warmEncoder.rows === warmSql.rows && warmEncoder.bytes === warmSql.bytes && warmEncoder.crc === warmSql.crc
    const encoder: number[] = []
    const sql: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      encoder.push((await encoderRun(pool, definition)).rate)
      sql.push((await sqlRun(pool, definition)).rate)
      if (process.env.BENCH_VERBOSE)
        process.stderr.write(
          `round ${round}: encoder ${rate(encoder[round] as number)} JSON in SQL ${rate(sql[round] as number)} rows/s\n`
        )
    }
    process.stdout.write(
      `${ROWS.toLocaleString('en')} rows, ${ROUNDS} rounds after a warm-up: COPY + WebAssembly encoder median ${rate(median(encoder))} rows/s (${range(encoder)}); ` +
        `JSON built in SQL median ${rate(median(sql))} rows/s (${range(sql)}); same bytes: ${identical ? 'yes' : `no (${warmEncoder.bytes} against ${warmSql.bytes} bytes)`}\n`
    )
  } finally {
    await pool.end()
    await postgres.destroy()
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`)
  process.exit(1)
})
