import { describe, expect, it } from 'vitest'
import { type ParamError, placeholderValues, readClientParams } from '../../src/main/proxy/request-params'

const read = (query: string, mode: 'forbidden' | 'read') => readClientParams(new URLSearchParams(query), mode)
const codeOf = (query: string, mode: 'forbidden' | 'read') => {
  try {
    read(query, mode)
    return null
  } catch (error) {
    return (error as ParamError).code
  }
}

describe('client query parameters', () => {
  it('keeps protocol parameters and drops unknown ones', () => {
    const params = read(
      'offset=-1&handle=h&live=true&cursor=3&log=full&subset__where=id%3E1&foo=bar&cache-buster=x',
      'forbidden'
    )
    expect(params.protocol).toEqual([
      ['offset', '-1'],
      ['handle', 'h'],
      ['live', 'true'],
      ['cursor', '3'],
      ['log', 'full'],
      ['subset__where', 'id>1'],
      ['cache-buster', 'x']
    ])
    expect(params.ignored).toEqual(['foo'])
  })

  it('refuses shape parameters on a named shape in every spelling', () => {
    for (const query of [
      'table=users',
      'TABLE=users',
      'Table=users',
      'where=true',
      'columns=id',
      'params[1]=x',
      'params%5B1%5D=x',
      'params=%7B%7D',
      'PARAMS[1]=x'
    ]) {
      expect(codeOf(`offset=-1&${query}`, 'forbidden')).toBe('server_owned_parameter')
    }
    expect(read('offset=-1&replica=full', 'forbidden').protocol).toContainEqual(['replica', 'full'])
  })

  it('refuses secrets and server-owned keys everywhere', () => {
    for (const mode of ['forbidden', 'read'] as const) {
      for (const query of ['secret=s', 'api_secret=s', 'SECRET=s', 'queryable_columns=id', 'source_id=x'])
        expect(codeOf(`offset=-1&${query}`, mode)).toBe('server_owned_parameter')
    }
  })

  it('refuses duplicates and case variants, so no reader can pick another copy', () => {
    expect(codeOf('offset=-1&offset=0_0', 'forbidden')).toBe('duplicate_parameter')
    expect(codeOf('offset=-1&OFFSET=0_0', 'forbidden')).toBe('unsupported_parameter')
    expect(codeOf('offset=-1&table=a&table=b', 'read')).toBe('duplicate_parameter')
    expect(codeOf('offset=-1&where=a&where=b', 'read')).toBe('duplicate_parameter')
    expect(codeOf('offset=-1&table=a&Table=b', 'read')).toBe('unsupported_parameter')
    expect(codeOf('offset=-1&params[1]=a&params[1]=b', 'read')).toBe('duplicate_parameter')
    expect(codeOf('offset=-1&params[x]=a', 'read')).toBe('unsupported_parameter')
    expect(codeOf('offset=-1&subset[where]=true', 'read')).toBe('unsupported_parameter')
    expect(codeOf('offset=-1&subset__foo=1', 'forbidden')).toBe('unsupported_parameter')
  })

  it('reads the shape parameters of the token-checking proxy', () => {
    const params = read('table=issues&where=id%20%3D%20%241&params[1]=7&columns=%22id%22&offset=-1', 'read')
    expect([...params.shape.keys()]).toEqual(['table', 'where', 'params[1]', 'columns'])
    expect(placeholderValues(params.shape)).toEqual({ 1: '7' })
  })
})
