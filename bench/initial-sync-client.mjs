// Child process of bench/shape-server.ts: one client's initial sync, as a real client does it (each response
// parsed as JSON, rows counted, nothing kept), from offset -1 to up-to-date. Like the official client, it asks for
// the next chunk as soon as a response's headers name its offset, while it reads and parses the current body.
// Prints {rows, requests, ms}. Usage: node bench/initial-sync-client.mjs <shape url without offset>
const [base] = process.argv.slice(2)
const brand = 'service'
const started = performance.now()
let rows = 0
let requests = 0

function request(offset, handle) {
  const url = new URL(base)
  url.searchParams.set('offset', offset)
  if (handle) url.searchParams.set('handle', handle)
  requests += 1
  return fetch(url)
}

let response = await request('-1', '')
for (;;) {
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`)
  const upToDate = response.headers.has(`${brand}-up-to-date`)
  const next = upToDate ? null : request(response.headers.get(`${brand}-offset`), response.headers.get(`${brand}-handle`))
  const messages = JSON.parse(await response.text())
  for (const message of messages) if (message.key) rows += 1
  if (!next) break
  response = await next
}
process.stdout.write(`${JSON.stringify({ rows, requests, ms: performance.now() - started })}\n`)
