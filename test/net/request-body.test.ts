import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseJsonBody, parseJsonObjectBody, readRequestBytes, RequestBodyError } from '../../src/main/net/request-body'

const LIMIT = 1000

/** A real server that answers what the reader made of each body: 200 with the JSON, or the refusal as JSON. */
describe('request body reader', () => {
  let server: Server
  let port = 0
  beforeAll(async () => {
    server = createServer((req, res) => {
      void readRequestBytes(req, LIMIT)
        .then((bytes) => ({ status: 200, body: { value: parseJsonObjectBody(bytes) } }))
        .catch((error: unknown) => {
          if (!(error instanceof RequestBodyError)) throw error
          return { status: error.status, body: { code: error.code, message: error.message } }
        })
        .then(({ status, body }) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
        )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  /** Sends `chunks` one write each (chunked unless a content-length is given). */
  const send = (chunks: Array<string | Buffer>, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/', headers }, (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
      })
      req.on('error', reject)
      for (const chunk of chunks) req.write(chunk)
      req.end()
    })

  it('reads a JSON object, a UTF-8 character split across writes included', async () => {
    const euro = Buffer.from('{"a":"€"}')
    expect(await send([euro.subarray(0, 7), euro.subarray(7)])).toEqual({ status: 200, body: { value: { a: '€' } } })
    expect(await send(['  \n'])).toEqual({ status: 200, body: { value: null } })
  })

  it('refuses a body over the limit, declared or streamed, with 413 JSON', async () => {
    // refused on the declared length, the body drained unread
    expect(await send(['x'.repeat(LIMIT + 1)], { 'content-length': String(LIMIT + 1) })).toEqual({
      status: 413,
      body: { code: 'body_too_large', message: `request body is larger than ${LIMIT} bytes` }
    })
    expect(await send(['{"a":"', 'x'.repeat(LIMIT), '"}'])).toEqual({
      status: 413,
      body: { code: 'body_too_large', message: `request body is larger than ${LIMIT} bytes` }
    })
    expect((await send(['{"a":"', 'x'.repeat(LIMIT - 10), '"}'])).status).toBe(200)
  })

  it('refuses bad JSON and JSON that is not an object with 400 JSON', async () => {
    expect(await send(['{"a":'])).toMatchObject({
      status: 400,
      body: { code: 'invalid_json', message: 'request body is not valid JSON' }
    })
    for (const text of ['[1]', '"x"', '3', 'null'])
      expect(await send([text])).toMatchObject({ status: 400, body: { code: 'invalid_body' } })
  })

  it('keeps the parser’s words for a 400, and lets any JSON value through parseJsonBody', () => {
    const error = (() => {
      try {
        parseJsonBody(Buffer.from('{nope'))
      } catch (caught) {
        return caught as RequestBodyError
      }
    })()
    expect(error?.details).toMatch(/JSON/)
    expect(parseJsonBody(Buffer.from('[1,2]'))).toEqual([1, 2])
    expect(parseJsonBody(new Uint8Array(0))).toBeNull()
  })
})
