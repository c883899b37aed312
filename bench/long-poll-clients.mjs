// Child process of bench/shape-server.ts: opens N identical live long-polls over raw sockets (the lightest client
// Node has; bench/long-poll-clients.c is its twin in C, lighter still) and prints, as JSON lines, when each complete
// answer arrived (performance.timeOrigin + now, in ms, comparable with the parent's clock). Sockets are closed only once every
// answer is in, so closing them costs nothing while answers arrive.
// Usage: node bench/long-poll-clients.mjs <url> <count>, or <@file> <count> for count polls of each URL in the file
// (one a line).
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'

const [target, count] = process.argv.slice(2)
const urls = target.startsWith('@') ? readFileSync(target.slice(1), 'utf8').trim().split('\n') : [target]
const now = () => performance.timeOrigin + performance.now()
const HEADER_END = Buffer.from('\r\n\r\n')
const LENGTH = 'content-length: '

/** Whether `received` holds a whole response: its headers and content-length bytes of body. */
function complete(received) {
  const headerEnd = received.indexOf(HEADER_END)
  if (headerEnd === -1) return false
  const head = received.toString('latin1', 0, headerEnd).toLowerCase()
  const at = head.indexOf(LENGTH)
  const length = at === -1 ? 0 : parseInt(head.slice(at + LENGTH.length), 10)
  return received.length >= headerEnd + 4 + length
}

function longPoll(url) {
  const { hostname, port, pathname, search } = new URL(url)
  const request = `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request))
    let received = null
    socket.on('data', (chunk) => {
      received = received === null ? chunk : Buffer.concat([received, chunk])
      if (!complete(received)) return
      resolve({ socket, answer: { status: Number(received.toString('latin1', 9, 12)), at: now() } })
    })
    socket.on('error', reject)
  })
}

const polls = []
for (const url of urls) {
  for (let i = 0; i < Number(count); i++) {
    const poll = longPoll(url)
    poll.catch(() => undefined) // Promise.all below reports it; this only keeps it from being unhandled meanwhile
    polls.push(poll)
    // In groups, so that the server's accept backlog never overflows (an overflow resets connections).
    if (polls.length % 200 === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
process.stdout.write(`${JSON.stringify({ ready: true })}\n`)
const results = await Promise.all(polls)
for (const { socket } of results) socket.destroy()
for (const { answer } of results) process.stdout.write(`${JSON.stringify(answer)}\n`)
