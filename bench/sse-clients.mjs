// Child process of bench/sse-fan-out.ts: opens N SSE streams over raw sockets (in batches, so the listen backlog
// holds them), prints {"ready":true} once every stream has its headers, then notes for each stream when its first
// up-to-date arrived and the gap before each keep-alive comment (performance.timeOrigin + now, in ms, comparable with
// the parent's clock). On "stop" (a line on stdin) it prints one JSON line with what it saw and exits.
// Usage: node bench/sse-clients.mjs <url> <count>
import { connect } from 'node:net'

const [url, count] = process.argv.slice(2)
const { hostname, port, pathname, search } = new URL(url)
const request = `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`
const now = () => performance.timeOrigin + performance.now()
const BATCH = 250

const streams = []

function open() {
  return new Promise((resolve, reject) => {
    const stream = {
      socket: null,
      headers: false,
      lastEvent: 0,
      delivered: null,
      keepAliveGaps: [],
      text: '',
      ended: false
    }
    const socket = connect(Number(port), hostname, () => socket.write(request))
    stream.socket = socket
    socket.setEncoding('latin1')
    socket.on('data', (chunk) => {
      const at = now()
      stream.text += chunk
      if (!stream.headers) {
        const end = stream.text.indexOf('\r\n\r\n')
        if (end === -1) return
        stream.headers = true
        stream.text = stream.text.slice(end + 4)
        stream.lastEvent = at
        resolve(stream)
      }
      if (stream.text.includes(': keep-alive')) stream.keepAliveGaps.push(at - stream.lastEvent)
      if (stream.delivered === null && stream.text.includes('"up-to-date"')) stream.delivered = at
      if (stream.text.includes('\n\n')) stream.lastEvent = at
      stream.text = stream.text.slice(stream.text.lastIndexOf('\n\n') + 2)
    })
    socket.on('end', () => (stream.ended = true))
    socket.on('error', reject)
  })
}

for (let opened = 0; opened < Number(count); opened += BATCH) {
  const batch = await Promise.all(Array.from({ length: Math.min(BATCH, Number(count) - opened) }, open))
  streams.push(...batch)
}
process.stdout.write(`${JSON.stringify({ ready: true })}\n`)

process.stdin.setEncoding('utf8')
process.stdin.on('data', (line) => {
  if (!line.includes('stop')) return
  const result = {
    delivered: streams.map((stream) => stream.delivered),
    keepAliveGaps: streams.flatMap((stream) => stream.keepAliveGaps),
    ended: streams.filter((stream) => stream.ended).length
  }
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0))
})
