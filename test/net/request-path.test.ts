import { describe, expect, it } from 'vitest'
import { routingPath } from '../../src/main/net/request-path'

/** As the servers see it: the request target prefixed (never resolved against a base), then its pathname. */
const pathOf = (target: string, trailingSlash?: 'keep' | 'drop') =>
  routingPath(new URL(`http://localhost${target}`).pathname, { trailingSlash })

describe('routing path', () => {
  it.each([
    '/v1/shape',
    '//v1/shape',
    '/v1//shape',
    '//v1/../v1/shape',
    '/v1/./shape',
    '/v1/%73hape',
    '/%761/shape',
    '/v1/%2e/shape',
    '/v1/x/%2e%2e/shape',
    '/v1/shape/',
    '/v1/shape//',
    '/v1/shape?x=/a//b'
  ])('reads the spelling %s as /v1/shape', (target) => {
    expect(pathOf(target, 'drop')).toBe('/v1/shape')
  })

  it('keeps a trailing slash unless asked, and the root as it is', () => {
    expect(pathOf('/v1/')).toBe('/v1/')
    expect(pathOf('//v1//')).toBe('/v1/')
    expect(pathOf('/', 'drop')).toBe('/')
    expect(pathOf('///', 'drop')).toBe('/')
  })

  it('does not resolve dot segments that were encoded slashes, so they match no route', () => {
    expect(pathOf('/v1/x%2F..%2Fshape', 'drop')).toBe('/v1/x/../shape')
    expect(pathOf('/v1/%2F%2Fshape', 'drop')).toBe('/v1/shape')
  })

  it('leaves a malformed escape as written', () => {
    expect(pathOf('/v1/%E0%A4%A/shape', 'drop')).toBe('/v1/%E0%A4%A/shape')
    expect(pathOf('/v1/%zz', 'drop')).toBe('/v1/%zz')
  })
})
