import { describe, expect, it } from 'vitest'
import {
  detectBrand,
  exposedProtocolHeaders,
  formatLsn,
  formatOffset,
  isProtocolHeader,
  isReservedParam,
  parseLsn,
  parseOffset,
  protocolHeaderNames,
  RESERVED_PARAMS
} from '../../src/shared/protocol'

describe('protocol vocabulary', () => {
  it('names the headers under each brand', () => {
    expect(protocolHeaderNames('service').offset).toBe('service-offset')
    expect(protocolHeaderNames('electric').upToDate).toBe('electric-up-to-date')
    expect(exposedProtocolHeaders(protocolHeaderNames('electric'))).toEqual([
      'electric-cursor',
      'electric-handle',
      'electric-has-data',
      'electric-offset',
      'electric-schema',
      'electric-up-to-date',
      'electric-internal-known-error',
      'retry-after'
    ])
  })

  it('detects the brand of a response, or none', () => {
    expect(detectBrand(new Headers({ 'electric-handle': 'h' }))).toBe('electric')
    expect(detectBrand(new Headers({ 'service-offset': '0_0' }))).toBe('service')
    expect(detectBrand(new Headers({ 'content-type': 'application/json' }))).toBeNull()
    expect(detectBrand((name) => name === 'service-handle')).toBe('service')
    expect(isProtocolHeader('Service-Cursor')).toBe(true)
    expect(isProtocolHeader('acme-cursor')).toBe(false)
  })

  it('reserves the position and subset parameters', () => {
    expect(RESERVED_PARAMS).toContain('subset__order_by_expr')
    expect(
      ['offset', 'cache-buster', 'expired_handle', 'subset__where', 'subset__anything'].every(isReservedParam)
    ).toBe(true)
    expect(['table', 'where', 'columns', 'replica', 'params[1]'].some(isReservedParam)).toBe(false)
  })

  it('reads and writes offsets', () => {
    expect(parseOffset('-1')).toEqual({ kind: 'start' })
    expect(parseOffset('-1_0')).toEqual({ kind: 'start' })
    expect(parseOffset('now')).toEqual({ kind: 'now' })
    expect(parseOffset('18446744073709551615_inf')).toEqual({
      kind: 'at',
      offset: { tx: 2n ** 64n - 1n, op: Infinity }
    })
  })

  it.each(['', '1', '1_', '_1', '1_-1', '18446744073709551616_0', '1_9007199254740993', 'inf_0', ' 1_0'])(
    'reads no offset in %j',
    (bad) => {
      expect(parseOffset(bad)).toBeNull()
    }
  )

  it.each(['0_0', '0_inf', '123_45'])('writes the offset %s as it was read', (text) => {
    const parsed = parseOffset(text)
    expect(parsed?.kind === 'at' && formatOffset(parsed.offset)).toBe(text)
  })

  it('reads and writes LSNs', () => {
    expect(parseLsn('16/B374D848')).toBe(0x16b374d848n)
    expect(formatLsn(0x16b374d848n)).toBe('16/B374D848')
    expect(formatLsn(parseLsn('FFFFFFFF/FFFFFFFF'))).toBe('FFFFFFFF/FFFFFFFF')
    expect(() => parseLsn('16B374D848')).toThrow('not an LSN')
  })
})
