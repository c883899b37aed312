// Child process of bench/shape-server.ts: initial syncs of one shape, one per line read from stdin (`count` or
// `parse`), each from offset -1 to up-to-date, asking for the next chunk as soon as a response's headers name its
// offset (as the official client does), while it reads the current body. One process runs every round, so after the
// warm-up round its JIT and memory are as warm as those of the COPY baseline's reader in the bench's own process.
// Two ways to take a body:
//   count — receive every byte and count the insert messages in it, as the COPY baseline's client counts COPY's
//           lines (bytes received and counted, not turned into objects); the snapshot-end message must arrive once;
//   parse — JSON.parse every body and count the rows, as an application would.
// Prints {"ready":true}, then {rows, requests, bytes, ms} after each sync; exits at a `stop` line.
// Usage: node bench/initial-sync-client.mjs <shape url without offset>
import { Agent, get } from 'node:http'
import { createInterface } from 'node:readline'

const [base] = process.argv.slice(2)
const brand = 'service'
const agent = new Agent({ keepAlive: true })
const INSERT = Buffer.from('{"headers":{"operation":"insert"')
const SNAPSHOT_END = Buffer.from('{"headers":{"control":"snapshot-end"')

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

function countBody(response, totals) {
  const inserts = counter(INSERT)
  const ends = counter(SNAPSHOT_END)
  return new Promise((resolve, reject) => {
    response.on('data', (chunk) => {
      totals.bytes += chunk.length
      totals.rows += inserts(chunk)
      totals.snapshotEnds += ends(chunk)
    })
    response.on('end', resolve)
    response.on('error', reject)
  })
}

function parseBody(response, totals) {
  const parts = []
  return new Promise((resolve, reject) => {
    response.on('data', (chunk) => {
      totals.bytes += chunk.length
      parts.push(chunk)
    })
    response.on('end', () => {
      for (const message of JSON.parse(Buffer.concat(parts).toString())) {
        if (message.key) totals.rows += 1
        if (message.headers.control === 'snapshot-end') totals.snapshotEnds += 1
      }
      resolve()
    })
    response.on('error', reject)
  })
}

/** GETs one chunk; resolves with the response once its headers arrive, and a promise of its body taken. */
function request(mode, totals, offset, handle) {
  const url = new URL(base)
  url.searchParams.set('offset', offset)
  if (handle) url.searchParams.set('handle', handle)
  totals.requests += 1
  return new Promise((resolve, reject) => {
    get(url, { agent }, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`HTTP ${response.statusCode} for offset ${offset}`))
      resolve({ response, body: (mode === 'parse' ? parseBody : countBody)(response, totals) })
    }).on('error', reject)
  })
}

async function sync(mode) {
  const started = performance.now()
  const totals = { rows: 0, snapshotEnds: 0, requests: 0, bytes: 0 }
  let current = await request(mode, totals, '-1', '')
  for (;;) {
    const { response, body } = current
    const upToDate = response.headers[`${brand}-up-to-date`] !== undefined
    const next = upToDate
      ? null
      : request(mode, totals, response.headers[`${brand}-offset`], response.headers[`${brand}-handle`])
    await body
    if (!next) break
    current = await next
  }
  if (totals.snapshotEnds !== 1) throw new Error(`expected one snapshot-end message, got ${totals.snapshotEnds}`)
  const { rows, requests, bytes } = totals
  return { rows, requests, bytes, ms: performance.now() - started }
}

process.stdout.write('{"ready":true}\n')
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === 'stop') break
  process.stdout.write(`${JSON.stringify(await sync(line.trim()))}\n`)
}
agent.destroy()
process.exit(0)
