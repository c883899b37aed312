import { describe, expect, it } from 'vitest'
import { parseArray } from '../../src/main/sql/arrays'
import { WhereRuntimeError } from '../../src/main/sql/errors'
import * as v from '../../src/main/sql/values'

describe('value parsing from Postgres text', () => {
  it('reads integers as Postgres does, with range checks', () => {
    expect(v.parseInt(' -42 ', 'int4')).toBe(-42n)
    expect(v.parseInt('0x1F', 'int4')).toBe(31n)
    expect(v.parseInt('1_000', 'int4')).toBe(1000n)
    expect(() => v.parseInt('32768', 'int2')).toThrow('smallint out of range')
    expect(() => v.parseInt('1.5', 'int4')).toThrow(WhereRuntimeError)
  })

  it('keeps numeric exact and its scale', () => {
    expect(v.numericToString(v.parseNumeric('1.50'))).toBe('1.50')
    expect(v.numericToString(v.parseNumeric('-0.001'))).toBe('-0.001')
    expect(v.numericToString(v.parseNumeric('1.5e3'))).toBe('1500')
    expect(v.numericToString(v.parseNumeric('15e-3'))).toBe('0.015')
    expect(v.canonicalNumber(v.parseNumeric('001.500'))).toBe('1.5')
    expect(v.compareNumeric(v.parseNumeric('0.1'), v.parseNumeric('0.10'))).toBe(0)
    expect(v.compareNumeric('NaN', v.parseNumeric('1e100'))).toBe(1)
    expect(v.compareNumeric('-Infinity', v.parseNumeric('-1e100'))).toBe(-1)
    expect(v.numericToString(v.multiplyNumeric(v.parseNumeric('1.5'), v.parseNumeric('0.25')))).toBe('0.375')
    expect(v.addNumeric('Infinity', '-Infinity', 1n)).toBe('NaN')
    expect(v.numericToInt(v.parseNumeric('-2.5'), 'int4')).toBe(-3n)
    expect(() => v.parseNumeric('1.2.3')).toThrow(WhereRuntimeError)
  })

  it('rounds float8 to integer half to even', () => {
    expect(v.floatToInt(2.5, 'int4')).toBe(2n)
    expect(v.floatToInt(3.5, 'int4')).toBe(4n)
    expect(v.floatToInt(-2.5, 'int4')).toBe(-2n)
  })

  it('reads booleans in every accepted spelling', () => {
    expect(['t', 'TRUE', 'yes', 'on', '1', ' tr '].map(v.parseBool)).toEqual([true, true, true, true, true, true])
    expect(['f', 'false', 'n', 'off', '0'].map(v.parseBool)).toEqual([false, false, false, false, false])
    expect(() => v.parseBool('o')).toThrow(WhereRuntimeError)
  })

  it('normalises uuids', () => {
    expect(v.parseUuid('{A0EEBC999C0B4EF8BB6D6BB9BD380A11}')).toBe('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')
    expect(() => v.parseUuid('a0eebc99')).toThrow(WhereRuntimeError)
  })

  it('reads dates and timestamps with offsets, BC and infinity', () => {
    expect(v.parseTimestamptz('2024-01-01 12:00:00+02')).toBe(v.parseTimestamptz('2024-01-01T10:00:00Z'))
    expect(v.parseTimestamptz('2024-01-01 05:30:00-04:30')).toBe(v.parseTimestamptz('2024-01-01 10:00:00+00'))
    expect(v.parseTimestamptz('infinity')).toBe(v.TIMESTAMP_INFINITY)
    expect(v.formatTimestamp(v.parseTimestamptz('2024-06-30 23:59:59.5+00'), true)).toBe('2024-06-30 23:59:59.5+00')
    expect(v.formatDate(v.parseDate('0044-03-15 BC'))).toBe('0044-03-15 BC')
    expect(v.parseDate('0001-01-01') - v.parseDate('0001-12-31 BC')).toBe(1)
    expect(v.parseTimestamp('2024-01-01 10:00:00+05')).toBe(v.parseTimestamp('2024-01-01 10:00:00'))
    expect(() => v.parseDate('2023-02-29')).toThrow('out of range')
    expect(() => v.parseDate('yesterday')).toThrow(WhereRuntimeError)
  })

  it('orders text by code point and folds ASCII only', () => {
    expect(v.compareText('Z', 'a')).toBe(-1)
    expect(v.compareText('é', 'z')).toBe(1)
    expect(v.compareText('😀', '\uffff')).toBe(1)
    expect(v.asciiLower('ÉCLAIR')).toBe('Éclair')
  })
})

describe('array literals', () => {
  it('reads elements, quoting, NULLs and nesting', () => {
    expect(parseArray('{a,"b c","d\\"e",NULL,"NULL"}')).toEqual(['a', 'b c', 'd"e', null, 'NULL'])
    expect(parseArray('{{1,2},{3,4}}')).toEqual(['1', '2', '3', '4'])
    expect(parseArray('[0:1]={x,y}')).toEqual(['x', 'y'])
    expect(parseArray('{}')).toEqual([])
    expect(() => parseArray('{a,}')).toThrow(WhereRuntimeError)
    expect(() => parseArray('a,b')).toThrow(WhereRuntimeError)
  })
})
