// Child process of bench/shape-server.ts: opens N identical live long-polls and prints, as JSON lines, the moment
// (performance.timeOrigin + now, in ms) each answer arrived, so the parent's clock can be compared with it.
// node:http rather than fetch: the client's own overhead must not dominate what is measured.
// Usage: node bench/long-poll-clients.mjs <url> <count>
import { Agent, get } from 'node:http'

const [url, count] = process.argv.slice(2)
const agent = new Agent({ keepAlive: true, maxSockets: Infinity })
const now = () => performance.timeOrigin + performance.now()
const answers = Array.from(
  { length: Number(count) },
  () =>
    new Promise((resolve, reject) => {
      get(url, { agent }, (response) => {
        response.resume()
        response.on('end', () => resolve({ status: response.statusCode, at: now() }))
      }).on('error', reject)
    })
)
process.stdout.write(`${JSON.stringify({ ready: true })}\n`)
for (const answer of await Promise.all(answers)) process.stdout.write(`${JSON.stringify(answer)}\n`)
agent.destroy()
