import { describe, expect, it } from 'vitest'
import { IdentifierError, parseTableName, quoteIdent } from '../../src/main/sql'

describe('parseTableName', () => {
  it('follows Postgres identifier rules', () => {
    expect(parseTableName('items')).toEqual({ schema: 'public', name: 'items' })
    expect(parseTableName('ITEMS')).toEqual({ schema: 'public', name: 'items' })
    expect(parseTableName('Public."items"')).toEqual({ schema: 'public', name: 'items' })
    expect(parseTableName('"Items"')).toEqual({ schema: 'public', name: 'Items' })
    expect(parseTableName('"my.schema"."we""ird"')).toEqual({ schema: 'my.schema', name: 'we"ird' })
    expect(parseTableName('"a, b"')).toEqual({ schema: 'public', name: 'a, b' })
    expect(parseTableName('café_$1')).toEqual({ schema: 'public', name: 'café_$1' })
  })

  it.each([
    ['', 'zero-length'],
    ['""', 'zero-length'],
    ['.x', 'zero-length'],
    ['x.', 'zero-length'],
    ['a.b.c', 'too many delimiters: a.b.c'],
    ['foob@r', 'special characters: foob@r'],
    ['1abc', 'special characters'],
    ['"open', 'unterminated quote'],
    ['ab"c"', 'unescaped quote'],
    ['"a"b', 'unescaped quote'],
    ['x; drop table y', 'special characters'],
    ['a'.repeat(64), 'too long']
  ])('rejects %j', (table, message) => {
    expect(() => parseTableName(table)).toThrow(IdentifierError)
    expect(() => parseTableName(table)).toThrow(message)
  })
})

describe('quoteIdent', () => {
  it('always quotes and doubles quotes', () => {
    expect(quoteIdent('items')).toBe('"items"')
    expect(quoteIdent('we"ird')).toBe('"we""ird"')
    expect(() => quoteIdent('a\u0000b')).toThrow('NUL')
  })
})
