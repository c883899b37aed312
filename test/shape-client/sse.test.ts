import { describe, expect, it } from 'vitest'
import { SseParser } from '../../src/shared/shape-client/sse'

describe('SseParser', () => {
  it('splits data events and keep-alive comments, across chunk boundaries', () => {
    const parser = new SseParser()
    const first = parser.push('data: {"a":1}\n\n: keep-al')
    expect(first).toEqual([{ kind: 'data', data: '{"a":1}', raw: 'data: {"a":1}' }])
    expect(parser.push('ive\n\ndata: {"b"')).toEqual([{ kind: 'comment', text: 'keep-alive', raw: ': keep-alive' }])
    expect(parser.push(':2}\r\n\r\n')).toEqual([{ kind: 'data', data: '{"b":2}', raw: 'data: {"b":2}' }])
  })

  it('joins multi-line data, ignores other fields, and flushes an unterminated block at the end', () => {
    const parser = new SseParser()
    expect(parser.push('event: x\nid: 3\ndata: one\ndata:two\n\n')).toEqual([
      { kind: 'data', data: 'one\ntwo', raw: 'event: x\nid: 3\ndata: one\ndata:two' }
    ])
    expect(parser.push('data: tail')).toEqual([])
    expect(parser.end()).toEqual([{ kind: 'data', data: 'tail', raw: 'data: tail' }])
    expect(parser.end()).toEqual([])
  })

  it('ends a block whose blank line straddles two pieces, and one that came in many pieces', () => {
    const parser = new SseParser()
    expect(parser.push('data: {"a":1}\n')).toEqual([])
    expect(parser.push('\ndata: {"b":')).toEqual([{ kind: 'data', data: '{"a":1}', raw: 'data: {"a":1}' }])
    for (const piece of '2, "c": "xyz"}'.split('')) expect(parser.push(piece)).toEqual([])
    expect(parser.push('\n')).toEqual([])
    expect(parser.push('')).toEqual([])
    expect(parser.push('\n: keep-alive\n\n')).toEqual([
      { kind: 'data', data: '{"b":2, "c": "xyz"}', raw: 'data: {"b":2, "c": "xyz"}' },
      { kind: 'comment', text: 'keep-alive', raw: ': keep-alive' }
    ])
    expect(parser.end()).toEqual([])
  })
})
