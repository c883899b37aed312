import { describe, expect, it } from 'vitest'
import { CopyEncoder } from '../../src/main/shapes/copy-encoder'
import type { ShapeDefinition } from '../../src/main/shapes/definition'
import { InsertEncoder } from '../../src/main/shapes/messages'
import { parseCopyLine } from '../../src/main/shapes/row-sql'
import type { TableColumn, TableInfo } from '../../src/main/shapes/table-info'

const column = (name: string, type: string, pkIndex: number | null = null): TableColumn => ({ name, type, typeOid: 0, isArray: false, dims: 0, typmod: -1, notNull: false, generated: false, pkIndex })

/** A table `"we/ird"."t.a""b"` keyed by (`k/1`, `k2`), with a text, a boolean and a text[] column. */
function definition(): ShapeDefinition {
  const columns = [column('k/1', 'text', 0), column('note', 'text'), column('done', 'bool'), { ...column('tags', 'text'), isArray: true, dims: 1 }, column('k2', 'int4', 1)]
  const table: TableInfo = { oid: 1, schema: 'we/ird', name: 't.a"b', columns, keyColumns: ['k/1', 'k2'], hasPrimaryKey: true, columnTypes: {} as TableInfo['columnTypes'], fingerprint: 'f' }
  return { input: {} as ShapeDefinition['input'], table, columns: ['k/1', 'note', 'done', 'tags', 'k2'], queryable: null, where: null, replica: 'default', log: 'full', identity: 'i' }
}

const LINES = [
  'a\tplain\tt\t{x,y}\t1',
  'a/b//c\tslash / in a value\tf\t\\N\t2',
  'q"uote\the said "hi"\t\\N\t{"a b","c\\\\"}\t3',
  '\\N\tnull key part\tt\t{}\t\\N',
  'esc\ttab\\there, newline\\nthere, cr\\r, backslash \\\\, bs\\b ff\\f\tf\t{}\t4',
  'vt\tvertical\\vtab\tt\t{}\t5',
  'ctl\traw \u0001 control\tt\t{}\t6',
  'uni\tñandú — 日本語 🎉\tt\t{}\t7',
  'bool-ish\tt\tx\t{}\t8',
  'few\tfields',
  'many\tfields\tt\t{}\t9\textra',
  '\\\\v\tescaped backslash then v\tf\t{}\t10'
]

describe('CopyEncoder', () => {
  it('encodes every COPY line as the general encoder does, escapes and fallbacks included', () => {
    const shape = definition()
    const general = new InsertEncoder(shape)
    const encoded = new CopyEncoder(shape).encode(Buffer.from(LINES.map((line) => `${line}\n`).join('')))
    const rows = encoded.data.toString().split('\n').slice(0, -1)
    expect(rows).toHaveLength(LINES.length)
    expect(encoded.rowEnds).toHaveLength(LINES.length)
    expect(encoded.rowEnds.at(-1)).toBe(encoded.data.length)
    rows.forEach((row, index) => expect(JSON.parse(row), LINES[index]).toEqual(JSON.parse(general.encode(parseCopyLine(LINES[index] as string)))))
  })

  it('writes keys with `/` doubled and booleans as true/false', () => {
    const [row] = new CopyEncoder(definition()).encode(Buffer.from('a/b\tx\tt\t{}\t1\n')).data.toString().split('\n')
    const message = JSON.parse(row as string) as { key: string; value: Record<string, string | null>; headers: unknown }
    expect(message.key).toBe('"we//ird"."t..a"b"/"a//b"/"1"')
    expect(message.value).toEqual({ 'k/1': 'a/b', note: 'x', done: 'true', tags: '{}', k2: '1' })
    expect(message.headers).toEqual({ operation: 'insert', relation: ['we/ird', 't.a"b'] })
  })

  it('keeps each result until the next call only', () => {
    const encoder = new CopyEncoder(definition())
    const first = Buffer.from(encoder.encode(Buffer.from('a\tone\tt\t{}\t1\n')).data)
    const second = encoder.encode(Buffer.from('b\ttwo\tf\t{}\t2\n')).data
    expect(JSON.parse(first.toString()).value.note).toBe('one')
    expect(JSON.parse(second.toString()).value.note).toBe('two')
  })
})
