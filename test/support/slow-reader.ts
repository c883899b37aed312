import { connect, type Socket } from 'node:net'

/** Requests `url` over a raw socket and never reads the answer: the server is left holding what it wants to send. */
export function slowReader(url: string): Promise<Socket> {
  const { hostname, port, pathname, search } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`)
      socket.pause()
      resolve(socket)
    })
    socket.on('error', reject)
  })
}
