import { type Socket, connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { overLimitAnswered } from '../../src/main/net/connection-limit'
import { holdConnections, onNewConnection, statusOn, tooManyConnections } from '../support/connections'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

describe('--max-connections: a flood of connections is refused, health still answers', () => {
  let server: TestShapeServer
  const MAX = 20

  beforeAll(async () => {
    server = await startTestShapeServer({ maxConnections: MAX })
  })
  afterAll(async () => server?.close())

  it('answers connections past the cap 503, closes those past its margin, and serves the ones it has', async () => {
    const port = Number(new URL(server.url).port)
    const held = await holdConnections(port, MAX)
    const flood: Socket[] = []
    try {
      const refused = await onNewConnection(`${server.url}/v1/shape?table=issues&offset=-1`)
      expect(refused.status).toBe(503)
      expect(refused.headers['retry-after']).toBe('5')
      expect(JSON.parse(refused.body)).toEqual(tooManyConnections('the Syncscope server', MAX))
      const health = await onNewConnection(`${server.url}/v1/health`)
      expect(health.status).toBe(200)
      expect(JSON.parse(health.body)).toEqual({ status: 'active' })

      // far more than the cap and its margin: the excess is closed at once, the process goes on
      let dropped = 0
      await Promise.all(
        Array.from(
          { length: 3 * overLimitAnswered(MAX) },
          () =>
            new Promise<void>((resolve) => {
              const socket = connect(port, '127.0.0.1')
              flood.push(socket)
              socket.on('error', () => undefined)
              socket.on('close', () => ((dropped += 1), resolve()))
              setTimeout(resolve, 2_000)
            })
        )
      )
      expect(dropped).toBeGreaterThan(overLimitAnswered(MAX))
      // the connections within the cap are served as before
      expect(await statusOn(held[0]!, port, '/v1/shape?table=issues&where=id%3D1&offset=-1')).toBe(200)
      expect(await statusOn(held[1]!, port, '/v1/health')).toBe(200)
    } finally {
      for (const socket of [...held, ...flood]) socket.destroy()
    }
    await expect
      .poll(async () => (await onNewConnection(`${server.url}/v1/shape?table=issues&offset=-1`)).status)
      .toBe(200)
  })
})
