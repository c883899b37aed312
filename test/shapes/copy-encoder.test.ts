import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { CopyEncoder, wholeLinesEnd } from '../../src/main/shapes/snapshot/copy-encoder'
import type { ResolvedShape } from '../../src/main/shapes/definition/definition'
import { InsertEncoder } from '../../src/main/shapes/storage/messages'
import { parseCopyLine } from '../../src/main/shapes/definition/row-sql'
import type { TableColumn, TableInfo } from '../../src/main/shapes/definition/table-info'

const column = (name: string, type: string, pkIndex: number | null = null): TableColumn => ({
  name,
  type,
  typeOid: 0,
  isArray: false,
  dims: 0,
  typmod: -1,
  notNull: false,
  generated: false,
  pkIndex
})

/** A table `"we/ird"."t.a""b"` keyed by (`k/1`, `k2`), with a text, a boolean and a text[] column. */
function definition(): ResolvedShape {
  const columns = [
    column('k/1', 'text', 0),
    column('note', 'text'),
    column('done', 'bool'),
    { ...column('tags', 'text'), isArray: true, dims: 1 },
    column('k2', 'int4', 1)
  ]
  const table: TableInfo = {
    oid: 1,
    schema: 'we/ird',
    name: 't.a"b',
    columns,
    keyColumns: ['k/1', 'k2'],
    hasPrimaryKey: true,
    columnTypes: {} as TableInfo['columnTypes'],
    fingerprint: 'f'
  }
  return {
    input: {} as ResolvedShape['input'],
    table,
    columns: ['k/1', 'note', 'done', 'tags', 'k2'],
    queryable: null,
    where: null,
    replica: 'default',
    log: 'full',
    identity: 'i'
  }
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
  '\\\\v\tescaped backslash then v\tf\t{}\t10',
  'p\ta -"x" , (y)\tt\t{}\t11',
  'q-/\tpunctuation before a tab.\tf\t{}\t12'
]

/** Random COPY lines (a `\N` is always a whole field, as COPY writes it): field bytes from COPY's escapes, quotes, slashes, punctuation, control and non-ASCII characters. */
function randomLines(count: number, seed: number): string[] {
  let state = seed
  // mulberry32
  const next = (limit: number) => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * limit) | 0
  }
  const pieces = [
    'a',
    'Z',
    '9',
    ' ',
    '-',
    '.',
    ',',
    '(',
    '"',
    '/',
    '//',
    '\\\\',
    '\\t',
    '\\n',
    '\\r',
    '\\b',
    '\\f',
    '\\v',
    '\u0001',
    '\u001f',
    'é',
    '日本',
    '🎉',
    '{',
    '}'
  ]
  const field = () =>
    next(10) === 0 ? '\\N' : Array.from({ length: next(8) }, () => pieces[next(pieces.length)]).join('')
  return Array.from({ length: count }, () => {
    const fields = next(20) === 0 ? 4 + next(3) * 2 - 1 : 5
    return Array.from({ length: fields }, (_, index) => (index === 2 ? ['t', 'f', '\\N', 'x'][next(4)] : field())).join(
      '\t'
    )
  })
}

describe('CopyEncoder', () => {
  it('encodes every COPY line as the general encoder does, escapes and fallbacks included', () => {
    const shape = definition()
    const general = new InsertEncoder(shape)
    const encoded = new CopyEncoder(shape).encode(Buffer.from(LINES.map((line) => `${line}\n`).join('')))
    const rows = encoded.data.toString().split('\n').slice(0, -1)
    expect(rows).toHaveLength(LINES.length)
    expect(encoded.rowEnds).toHaveLength(LINES.length)
    expect(encoded.rowEnds.at(-1)).toBe(encoded.data.length)
    rows.forEach((row, index) =>
      expect(JSON.parse(row), LINES[index]).toEqual(JSON.parse(general.encode(parseCopyLine(LINES[index] as string))))
    )
  })

  it('agrees with the general encoder on random lines, in one batch and line by line', () => {
    const shape = definition()
    const general = new InsertEncoder(shape)
    const encoder = new CopyEncoder(shape)
    const lines = randomLines(2000, 7)
    const batch = encoder
      .encode(Buffer.from(lines.map((line) => `${line}\n`).join('')))
      .data.toString()
      .split('\n')
      .slice(0, -1)
    expect(batch).toHaveLength(lines.length)
    lines.forEach((line, index) => {
      const expected = JSON.parse(general.encode(parseCopyLine(line)))
      expect(JSON.parse(batch[index] as string), line).toEqual(expected)
      expect(JSON.parse(encoder.encode(Buffer.from(`${line}\n`)).data.toString()), line).toEqual(expected)
    })
  })

  it('agrees with the general encoder wherever a special byte falls in the sixteen bytes it reads at a time', () => {
    const shape = definition()
    const general = new InsertEncoder(shape)
    const encoder = new CopyEncoder(shape)
    // escapes as COPY writes them (each backslash of the data escaped), a quote, a slash, bytes a fallback takes
    const specials = ['"', '/', '\\\\', '\\\\\\\\', '\\n', '\\t', '\\v', '\u0001', 'é']
    const lines = specials.flatMap((special) =>
      Array.from({ length: 40 }, (_, at) => {
        const field = `${'k'.repeat(at)}${special}${'z'.repeat(39 - at)}`
        return [
          `${field}\t${field}\t${at % 2 ? 't' : 'f'}\t{}\t${at}`,
          `${at}\t${'n'.repeat(at)}\t\\N\t${field}\t${at}`
        ]
      }).flat()
    )
    const batch = encoder.encode(Buffer.from(lines.map((line) => `${line}\n`).join('')))
    const rows = batch.data.toString().split('\n').slice(0, -1)
    expect(rows).toHaveLength(lines.length)
    expect(Array.from(batch.rowEnds)).toEqual(
      rows.map((_, index) => Buffer.byteLength(rows.slice(0, index + 1).join('\n')) + 1)
    )
    lines.forEach((line, index) => {
      const expected = JSON.parse(general.encode(parseCopyLine(line)))
      expect(JSON.parse(rows[index] as string), line).toEqual(expected)
      expect(JSON.parse(encoder.encode(Buffer.from(`${line}\n`)).data.toString()), line).toEqual(expected)
    })
  })

  it('makes room when lines the general encoder takes grow beyond what was reserved', () => {
    const shape = definition()
    const general = new InsertEncoder(shape)
    const controls = '\u0001'.repeat(50)
    const lines = Array.from({ length: 300 }, (_, index) =>
      index % 3 === 0 ? `k${index}\tplain\tt\t{}\t${index}` : `${controls}${index}\t${controls}\tf\t{}\t${index}`
    )
    const encoded = new CopyEncoder(shape).encode(Buffer.from(lines.map((line) => `${line}\n`).join('')))
    const rows = encoded.data.toString().split('\n').slice(0, -1)
    expect(
      Array.from(encoded.rowEnds, (end, index) => end - (index === 0 ? 0 : (encoded.rowEnds[index - 1] as number)))
    ).toEqual(rows.map((row) => Buffer.byteLength(row) + 1))
    rows.forEach((row, index) =>
      expect(JSON.parse(row)).toEqual(JSON.parse(general.encode(parseCopyLine(lines[index] as string))))
    )
  })

  it('writes keys with `/` doubled and booleans as true/false', () => {
    const [row] = new CopyEncoder(definition()).encode(Buffer.from('a/b\tx\tt\t{}\t1\n')).data.toString().split('\n')
    const message = JSON.parse(row as string) as { key: string; value: Record<string, string | null>; headers: unknown }
    expect(message.key).toBe('"we//ird"."t..a"b"/"a//b"/"1"')
    expect(message.value).toEqual({ 'k/1': 'a/b', note: 'x', done: 'true', tags: '{}', k2: '1' })
    expect(message.headers).toEqual({ operation: 'insert', relation: ['we/ird', 't.a"b'] })
  })

  it('never reads past the end of its input, even where an earlier batch left a newline', () => {
    const encoder = new CopyEncoder(definition())
    const lines = 'a\tone\tt\t{}\t1\nb\ttwo\tf\t{}\t2\n'
    expect(encoder.encode(Buffer.from(lines)).rowEnds).toHaveLength(2)
    const cut = encoder.encode(Buffer.from(lines.slice(0, -1)))
    expect(cut.rowEnds).toHaveLength(1)
    expect(JSON.parse(cut.data.toString()).value.note).toBe('one')
  })

  it('keeps each result until the next call only', () => {
    const encoder = new CopyEncoder(definition())
    const first = Buffer.from(encoder.encode(Buffer.from('a\tone\tt\t{}\t1\n')).data)
    const second = encoder.encode(Buffer.from('b\ttwo\tf\t{}\t2\n')).data
    expect(JSON.parse(first.toString()).value.note).toBe('one')
    expect(JSON.parse(second.toString()).value.note).toBe('two')
  })
})

describe('wholeLinesEnd', () => {
  const lines = Buffer.from('a\nbb\ncccccccccc\nd\n')

  it('cuts after the last whole line within the bytes it may take', () => {
    expect(wholeLinesEnd(lines, 0, 6)).toBe(5)
    expect(wholeLinesEnd(lines, 2, 4)).toBe(5)
    expect(wholeLinesEnd(lines, 5, 100)).toBe(lines.length)
  })

  it('takes a line longer than that whole', () => {
    expect(wholeLinesEnd(lines, 5, 4)).toBe(16)
  })
})

describe('the compiled encoder module', () => {
  it('is the build of copy-encoder.wat as it stands', () => {
    const check = spawnSync(process.execPath, ['scripts/build-wasm.mjs', '--check'], { encoding: 'utf8' })
    expect(check.stderr).toBe('')
    expect(check.status).toBe(0)
  })
})
