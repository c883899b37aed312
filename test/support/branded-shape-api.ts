import type pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { get, type ShapeResponse } from './shape-http'
import { startTestShapeServer, type TestShapeServer } from './shape-server'

/** How long a live request of the branded shape servers waits before it answers up-to-date alone. */
export const LONG_POLL_MS = 1500

/** A shape server with one header brand, and the calls a protocol test makes on it. */
export interface BrandedShapeApi {
  readonly brand: 'service' | 'electric'
  /** Started before the describe block's tests, closed after them. */
  readonly server: TestShapeServer
  /** A GET of the shape API, its `@…` headers read in this brand. */
  fetchShape(params: Record<string, string>, init?: RequestInit): Promise<ShapeResponse>
  /** A statement on the server's database. */
  sql(text: string, values?: unknown[]): Promise<pg.QueryResult>
}

/**
 * `describe('shape API with header brand …')` once per header brand, each with a shape server of its own (long-poll
 * timeout LONG_POLL_MS, SSE keep-alive 0.4 s) that `body`'s tests share.
 */
export function describeEachBrand(body: (api: BrandedShapeApi) => void): void {
  describe.each(['service', 'electric'] as const)('shape API with header brand %s', (brand) => {
    let server: TestShapeServer | undefined
    beforeAll(async () => {
      server = await startTestShapeServer({ headerBrand: brand, longPollTimeout: LONG_POLL_MS, sseKeepAlive: 400 })
    })
    afterAll(async () => server?.close())
    const api: BrandedShapeApi = {
      brand,
      get server() {
        if (!server) throw new Error('the shape server is started in beforeAll')
        return server
      },
      fetchShape: (params, init = {}) => get(api.server.url, params, init, brand),
      sql: (text, values = []) => api.server.pool.query(text, values)
    }
    body(api)
  })
}
