import { describe, expect, it } from 'vitest'
import { ShapeStream } from '../../src/shared/shape-client/client'

describe('ShapeStream options', () => {
  it('refuses what it cannot use, before any request', () => {
    expect(() => new ShapeStream({ url: 'not a url', params: { table: 't' } })).toThrow('not an http(s) URL: not a url')
    expect(() => new ShapeStream({ url: 'file:///etc/passwd', params: { table: 't' } })).toThrow(/not an http\(s\) URL/)
    expect(
      () => new ShapeStream({ url: 'http://127.0.0.1:1/v1/shape', params: { table: 't', offset: '0_0', live: 'true' } })
    ).toThrow('these parameters are set by the stream, not as params: offset, live')
    expect(
      () => new ShapeStream({ url: 'http://127.0.0.1:1/v1/shape', params: { table: 't', subset__where: 'true' } })
    ).toThrow('not as params: subset__where')
    expect(
      () => new ShapeStream({ url: 'http://127.0.0.1:1/v1/shape', params: { table: 't' }, offset: '0_0' })
    ).toThrow('offset 0_0 needs a handle')
    expect(
      new ShapeStream({ url: 'http://127.0.0.1:1/v1/shape', params: { table: 't' }, offset: 'now' }).current
    ).toMatchObject({ phase: 'initial', offset: 'now', liveMode: 'long-poll' })
  })
})
