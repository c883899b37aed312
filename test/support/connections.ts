/** Raw connections for the connection-limit tests: held idle, used for one request, written to by hand. */
import { request } from 'node:http'
import { type Socket, connect } from 'node:net'

/** One request on a connection of its own (no pooled connection is reused). */
export function onNewConnection(
  url: string
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { agent: false }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => (body += chunk.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
      .on('error', reject)
      .end()
  })
}

/** Opens `count` connections to a loopback port and keeps them, idle; resolves once all are connected. */
export function holdConnections(port: number, count: number): Promise<Socket[]> {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1', () => resolve(socket))
          socket.on('error', reject)
        })
    )
  )
}

/** The status of a request written on a connection already open. */
export function statusOn(socket: Socket, port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    let text = ''
    const read = (chunk: Buffer) => {
      text += chunk.toString()
      const status = /^HTTP\/1\.1 (\d+)/.exec(text)
      if (!status) return
      socket.off('data', read)
      resolve(Number(status[1]))
    }
    socket.on('data', read)
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  })
}

/** The body of the 503 a server past its connection limit answers. */
export const tooManyConnections = (server: string, max: number) => ({
  code: 'too_many_connections',
  message: `${server} has ${max} connections open, its limit (--max-connections): retry in a few seconds`
})
