// Child process of bench/shape-server.ts: opens N identical live long-polls over raw sockets (the lightest client
// there is, so what is measured is the server) and prints, as JSON lines, when each complete answer arrived
// (performance.timeOrigin + now, in ms, comparable with the parent's clock).
// Usage: node bench/long-poll-clients.mjs <url> <count>
import { connect } from 'node:net'

const [url, count] = process.argv.slice(2)
const { hostname, port, pathname, search } = new URL(url)
const request = `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`
const now = () => performance.timeOrigin + performance.now()

function longPoll() {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request))
    let received = Buffer.alloc(0)
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk])
      const headerEnd = received.indexOf('\r\n\r\n')
      if (headerEnd === -1) return
      const head = received.subarray(0, headerEnd).toString('latin1')
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)
      if (received.length < headerEnd + 4 + length) return
      resolve({ status: Number(head.slice(9, 12)), at: now() })
      socket.destroy()
    })
    socket.on('error', reject)
  })
}

const answers = Array.from({ length: Number(count) }, longPoll)
process.stdout.write(`${JSON.stringify({ ready: true })}\n`)
for (const answer of await Promise.all(answers)) process.stdout.write(`${JSON.stringify(answer)}\n`)
