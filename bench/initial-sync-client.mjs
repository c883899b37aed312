// Child process of bench/shape-server.ts: one client's initial sync, from offset -1 to up-to-date, asking for the
// next chunk as soon as a response's headers name its offset (as the official client does), while it reads the
// current body. Two ways to take a body:
//   count — receive every byte and count the insert messages in it, as the COPY baseline's client counts COPY's
//           lines (bytes received and counted, not turned into objects); the snapshot-end message must arrive once;
//   parse — JSON.parse every body and count the rows, as an application would.
// Prints {rows, requests, bytes, ms}. Usage: node bench/initial-sync-client.mjs <shape url without offset> [count|parse]
import { Agent, get } from 'node:http'

const [base, mode = 'count'] = process.argv.slice(2)
const brand = 'service'
const agent = new Agent({ keepAlive: true })
const INSERT = Buffer.from('{"headers":{"operation":"insert"')
const SNAPSHOT_END = Buffer.from('{"headers":{"control":"snapshot-end"')
const started = performance.now()
let rows = 0
let snapshotEnds = 0
let requests = 0
let bytes = 0

/** Counts `pattern` in a stream of chunks, across chunk boundaries (without copying the chunks). */
function counter(pattern) {
  let carry = Buffer.alloc(0)
  const countIn = (data) => {
    let found = 0
    for (let at = data.indexOf(pattern); at !== -1; at = data.indexOf(pattern, at + pattern.length)) found += 1
    return found
  }
  return (chunk) => {
    // a match that starts in the previous chunk's tail and ends in this one
    const seam = carry.length > 0 ? countIn(Buffer.concat([carry, chunk.subarray(0, pattern.length - 1)])) : 0
    carry = Buffer.from(chunk.subarray(Math.max(0, chunk.length - pattern.length + 1)))
    return seam + countIn(chunk)
  }
}

function countBody(response) {
  const inserts = counter(INSERT)
  const ends = counter(SNAPSHOT_END)
  return new Promise((resolve, reject) => {
    response.on('data', (chunk) => {
      bytes += chunk.length
      rows += inserts(chunk)
      snapshotEnds += ends(chunk)
    })
    response.on('end', resolve)
    response.on('error', reject)
  })
}

function parseBody(response) {
  const parts = []
  return new Promise((resolve, reject) => {
    response.on('data', (chunk) => {
      bytes += chunk.length
      parts.push(chunk)
    })
    response.on('end', () => {
      for (const message of JSON.parse(Buffer.concat(parts).toString())) {
        if (message.key) rows += 1
        if (message.headers.control === 'snapshot-end') snapshotEnds += 1
      }
      resolve()
    })
    response.on('error', reject)
  })
}

/** GETs one chunk; resolves with the response once its headers arrive, and a promise of its body taken. */
function request(offset, handle) {
  const url = new URL(base)
  url.searchParams.set('offset', offset)
  if (handle) url.searchParams.set('handle', handle)
  requests += 1
  return new Promise((resolve, reject) => {
    get(url, { agent }, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`HTTP ${response.statusCode} for offset ${offset}`))
      resolve({ response, body: mode === 'parse' ? parseBody(response) : countBody(response) })
    }).on('error', reject)
  })
}

let current = await request('-1', '')
for (;;) {
  const { response, body } = current
  const upToDate = response.headers[`${brand}-up-to-date`] !== undefined
  const next = upToDate ? null : request(response.headers[`${brand}-offset`], response.headers[`${brand}-handle`])
  await body
  if (!next) break
  current = await next
}
agent.destroy()
if (snapshotEnds !== 1) throw new Error(`expected one snapshot-end message, got ${snapshotEnds}`)
process.stdout.write(`${JSON.stringify({ rows, requests, bytes, ms: performance.now() - started })}\n`)
