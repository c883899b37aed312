import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseServeOptions } from '../../src/main/cli/serve-options'
import { get } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

describe.each(['service', 'electric'] as const)('--cache-max-age / --cache-stale-age, %s headers', (brand) => {
  let tuned: TestShapeServer
  let plain: TestShapeServer

  beforeAll(async () => {
    ;[tuned, plain] = await Promise.all([
      startTestShapeServer({ headerBrand: brand, cacheMaxAge: 5, cacheStaleAge: 0, longPollTimeout: 1000 }),
      startTestShapeServer({ headerBrand: brand, longPollTimeout: 1000 })
    ])
    for (const server of [tuned, plain]) await server.pool.query('CREATE TABLE cached (id int PRIMARY KEY, label text)')
    for (const server of [tuned, plain]) await server.pool.query("INSERT INTO cached VALUES (1, 'one'), (2, 'two')")
  })

  afterAll(async () => {
    await Promise.all([tuned?.close(), plain?.close()])
  })

  /** The cache-control of a catch-up answer, of `offset=now`, of a 304 of the catch-up, and of the other classes. */
  async function cacheHeaders(server: TestShapeServer) {
    const shape = { table: 'cached' }
    const initial = await get(server.url, { ...shape, offset: '-1' }, {}, brand)
    const handle = initial.header('@handle') ?? ''
    const catchUp = await get(server.url, { ...shape, offset: initial.header('@offset') ?? '', handle }, {}, brand)
    expect(catchUp.status).toBe(200)
    const revalidated = await get(
      server.url,
      { ...shape, offset: initial.header('@offset') ?? '', handle },
      { headers: { 'if-none-match': catchUp.header('etag') ?? '' } },
      brand
    )
    expect(revalidated.status).toBe(304)
    const now = await get(server.url, { ...shape, offset: 'now' }, {}, brand)
    const live = await get(
      server.url,
      { ...shape, offset: catchUp.header('@offset') ?? '', handle, live: 'true' },
      {},
      brand
    )
    return [initial, catchUp, revalidated, now, live].map((response) => response.header('cache-control'))
  }

  it('sets max-age and stale-while-revalidate of catch-up answers, `now` and their 304s; nothing else changes', async () => {
    const [tunedHeaders, plainHeaders] = await Promise.all([cacheHeaders(tuned), cacheHeaders(plain)])
    expect(tunedHeaders).toEqual([
      'public, max-age=604800, s-maxage=3600, stale-while-revalidate=2629746',
      'public, max-age=5, stale-while-revalidate=0',
      'public, max-age=5, stale-while-revalidate=0',
      'public, max-age=5, stale-while-revalidate=0',
      'public, max-age=5, stale-while-revalidate=5'
    ])
    expect(plainHeaders).toEqual([
      'public, max-age=604800, s-maxage=3600, stale-while-revalidate=2629746',
      'public, max-age=60, stale-while-revalidate=300',
      'public, max-age=60, stale-while-revalidate=300',
      'public, max-age=60, stale-while-revalidate=300',
      'public, max-age=5, stale-while-revalidate=5'
    ])
  })
})

describe('parsing the cache options', () => {
  it('takes whole seconds, defaults to 60 and 300, and names a bad value', () => {
    expect(parseServeOptions([])).toMatchObject({ cacheMaxAge: 60, cacheStaleAge: 300 })
    expect(parseServeOptions(['--cache-max-age', '0', '--cache-stale-age', '86400'])).toMatchObject({
      cacheMaxAge: 0,
      cacheStaleAge: 86400
    })
    expect(() => parseServeOptions(['--cache-max-age', 'soon'])).toThrow('--cache-max-age must be a number of seconds')
    expect(() => parseServeOptions(['--cache-stale-age=-1'])).toThrow('--cache-stale-age must be 0 or more seconds')
    expect(() => parseServeOptions(['--cache-max-age', '1.5'])).toThrow(
      '--cache-max-age must be a whole number of seconds'
    )
    expect(() => parseServeOptions(['--cache-max-age', '99999999'])).toThrow('--cache-max-age must be at most a year')
  })
})
