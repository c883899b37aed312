import type pg from 'pg'
import type { ResolvedShape } from '../definition/definition'
import { selectRowsSql } from '../definition/row-sql'
import { InsertEncoder } from '../storage/messages'
import type { EncodedRows } from './copy-encoder'

/** Rows handed over at a time. */
const BATCH_ROWS = 1_000
/** Every value as the text Postgres formats it (the display settings are set), as COPY and pgoutput give it. */
const TEXT_VALUES = { getTypeParser: () => (value: string) => value }

/**
 * The plain path beside the snapshot's fast one (COPY read off the socket by CopyOut, encoded by the WebAssembly
 * encoder): an ordinary query whose rows pg parses, each encoded by the general encoder. Slower; the fast path must
 * write the same bytes (test/shapes/fast-path-seams.test.ts).
 */
export async function plainRows(
  client: pg.PoolClient,
  definition: ResolvedShape,
  add: (rows: EncodedRows) => Promise<void>
): Promise<void> {
  const encoder = new InsertEncoder(definition)
  const text = selectRowsSql(definition.table, encoder.columns, definition.where?.sql ?? null)
  const { rows } = await client.query<Array<string | null>>({ text, rowMode: 'array', types: TEXT_VALUES })
  for (let at = 0; at < rows.length; at += BATCH_ROWS) {
    const lines = rows.slice(at, at + BATCH_ROWS).map((row) => Buffer.from(`${encoder.encode(row)}\n`))
    const rowEnds = new Int32Array(lines.length)
    lines.reduce((end, line, index) => (rowEnds[index] = end + line.length), 0)
    await add({ data: Buffer.concat(lines), rowEnds })
  }
}
