import type pg from 'pg'
import type { ColumnInfoSchema, TableInfo } from '../../shared/contract/db'
import type { WriteKind, WriteReport } from '../../shared/contract/shapes-workbench'
import type { z } from 'zod'

type Column = z.infer<typeof ColumnInfoSchema>

const INTEGER = /^(smallint|integer|bigint)$/

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`

const maxLength = (column: Column) => Number(/^character varying\((\d+)\)$/.exec(column.type)?.[1] ?? 0) || null

/** A new value for a column of a type this generator knows, as SQL; null for other types. */
function newValue(column: Column): string | null {
  const name = quote(column.name)
  if (INTEGER.test(column.type)) return `(floor(random() * 5) + 1)::${column.type}`
  if (/^(numeric|real|double precision)/.test(column.type)) return `round((random() * 10)::numeric, 1)`
  if (column.type === 'boolean') return `coalesce(NOT ${name}, true)`
  if (column.type === 'text' || column.type.startsWith('character varying')) {
    const text = `${name} || ' ' || left(md5(random()::text), 6)`
    const limit = maxLength(column)
    return limit ? `right(${text}, ${limit})` : text
  }
  return null
}

/** A fresh primary key value, for single-column integer or uuid keys. */
function newKey(table: TableInfo): string | null {
  const [key, ...rest] = table.primaryKey
  const column = table.columns.find((candidate) => candidate.name === key)
  if (!column || rest.length > 0) return null
  if (INTEGER.test(column.type))
    return `(SELECT coalesce(max(${quote(column.name)}), 0) + 1 FROM ${table.qualifiedName})`
  return column.type === 'uuid' ? 'gen_random_uuid()' : null
}

const pickRandomRow = (table: TableInfo) => `(SELECT ctid FROM ${table.qualifiedName} ORDER BY random() LIMIT 1)`

/** SQL for one random write of that kind on the table; null when the table has nothing this generator can change. */
export function randomWriteSql(table: TableInfo, kind: WriteKind, random: () => number = Math.random): string | null {
  const others = table.columns.filter((column) => !column.isPrimaryKey)
  if (kind === 'delete') return `DELETE FROM ${table.qualifiedName} WHERE ctid = ${pickRandomRow(table)}`
  if (kind === 'update') {
    // Integer columns are often foreign keys (which a random value would break): used only when nothing else is.
    const changeable = others.filter((column) => newValue(column) !== null)
    const preferred = changeable.filter((column) => !INTEGER.test(column.type))
    const candidates = preferred.length > 0 ? preferred : changeable
    const column = candidates[Math.floor(random() * candidates.length)]
    return column
      ? `UPDATE ${table.qualifiedName} SET ${quote(column.name)} = ${newValue(column)} WHERE ctid = ${pickRandomRow(table)}`
      : null
  }
  const key = newKey(table)
  if (!key || table.primaryKey[0] === undefined) return null
  const names = [table.primaryKey[0], ...others.map((column) => column.name)].map(quote).join(', ')
  const values = [
    key,
    ...others.map((column) =>
      column.type === 'text' || column.type.startsWith('character varying') ? newValue(column) : quote(column.name)
    )
  ].join(', ')
  return `INSERT INTO ${table.qualifiedName} (${names}) SELECT ${values} FROM ${table.qualifiedName} ORDER BY random() LIMIT 1 ON CONFLICT DO NOTHING`
}

/** Runs `count` random writes, each its own transaction, so a shape sees them as separate changes. */
export async function randomWrites(
  pool: pg.Pool,
  table: TableInfo,
  count: number,
  kinds: WriteKind[],
  random: () => number = Math.random
): Promise<WriteReport> {
  const report: WriteReport = { applied: { insert: 0, update: 0, delete: 0 }, failed: 0, errors: [] }
  const possible = kinds.filter((kind) => randomWriteSql(table, kind, random) !== null)
  if (possible.length === 0)
    return { ...report, errors: [`the generator cannot ${kinds.join('/')} rows of ${table.qualifiedName}`] }
  for (let index = 0; index < count; index++) {
    const kind = possible[Math.floor(random() * possible.length)] ?? 'update'
    try {
      const result = await pool.query(randomWriteSql(table, kind, random) ?? '')
      if ((result.rowCount ?? 0) > 0) report.applied[kind] += 1
    } catch (error) {
      report.failed += 1
      const message = (error as Error).message
      if (report.errors.length < 3 && !report.errors.includes(message)) report.errors.push(message)
    }
  }
  return report
}
