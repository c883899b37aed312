import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tapMain } from '../../src/main/cli/doctor'
import { startTap, type RunningTap } from '../../src/main/doctor/tap'
import { holdConnections, tooManyConnections } from '../support/connections'
import {
  MAX_BODY_CHARS,
  MAX_ENTRIES,
  MAX_FRAMES,
  MAX_RECORDED_CHARS,
  TapRecording,
  newEntry
} from '../../src/main/doctor/tap-recording'

/** 40 MB of SSE frames, gzipped to well under 1 MB: what a hostile or broken upstream can send. */
const BOMB_FRAMES = 4_000_000
const bomb = gzipSync(Buffer.from('data: {}\n\n'.repeat(BOMB_FRAMES)), { level: 9 })

describe('syncscope tap keeps its recording bounded', () => {
  let upstream: Server
  let tap: RunningTap
  let dir: string

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      if (req.url === '/ok') return res.writeHead(200, { 'content-type': 'application/json' }).end('[]')
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' })
      if (!req.url?.startsWith('/broken')) return res.end(bomb)
      // not gzip at all, in pieces: the tap records what it can and goes on
      res.write(Buffer.from('data: not gzip\n\n'))
      setTimeout(() => res.end(Buffer.from('data: still not gzip\n\n')), 50)
    })
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    dir = await mkdtemp(join(tmpdir(), 'syncscope-tap-bounds-'))
    tap = await startTap({
      upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      host: '127.0.0.1',
      port: 0,
      out: join(dir, 'tap.har'),
      maxConnections: 3
    })
  })
  afterAll(async () => {
    await tap?.close()
    upstream?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('passes a body that is not what its content-encoding says, and records what it could', async () => {
    const response = await fetch(`${tap.url}/broken`, { headers: { 'accept-encoding': 'identity' } }).catch(
      (error: Error) => error
    )
    // the client's own decoder fails on it; the tap neither fails nor stops
    if (!(response instanceof Error)) await response.arrayBuffer().catch(() => undefined)
    await expect.poll(() => tap.entries.some((entry) => entry.request.url.endsWith('/broken'))).toBe(true)
    const after = await fetch(`${tap.url}/ok`)
    expect(after.status).toBe(200)
    expect(await after.text()).toBe('[]')
  })

  it('passes a compressed body through untouched but decompresses and records only up to its limit', async () => {
    const response = await fetch(`${tap.url}/v1/shape?table=issues&offset=0_inf&handle=h&live=true&live_sse=true`, {
      headers: { 'accept-encoding': 'gzip' }
    })
    // fetch inflates what the tap passed on: all of it arrived
    expect((await response.text()).length).toBe(BOMB_FRAMES * 10)
    const recorded = () => tap.entries.find((entry) => entry.request.url.includes('live_sse'))
    await expect.poll(recorded).toBeDefined()
    const entry = recorded()
    expect(entry!.response.bodySize).toBe(bomb.length)
    expect(entry!.response.content.text.length).toBe(MAX_BODY_CHARS)
    expect(entry!.response.content._truncated).toBe(true)
    expect(entry!._frames).toHaveLength(MAX_FRAMES)
    await tap.close()
    const har = await readFile(join(dir, 'tap.har'), 'utf8')
    expect(har.length).toBeLessThan(3 * MAX_BODY_CHARS)
  })

  it('answers connections past its cap 503 naming the limit', async () => {
    const other = await startTap({
      upstream: 'http://127.0.0.1:9',
      host: '127.0.0.1',
      port: 0,
      out: join(dir, 'other.har'),
      maxConnections: 2
    })
    const port = Number(new URL(other.url).port)
    const held = await holdConnections(port, 2)
    try {
      const refused = await fetch(`${other.url}/v1/shape?offset=-1`)
      expect(refused.status).toBe(503)
      expect(await refused.json()).toEqual(tooManyConnections('the tap', 2))
    } finally {
      for (const socket of held) socket.destroy()
      await other.close()
    }
  })

  it('takes its cap as --max-connections, and refuses a cap that is no number of connections', async () => {
    const lines: string[] = []
    const io = { out: (text: string) => lines.push(text), err: (text: string) => lines.push(text) }
    expect(await tapMain(['--upstream', 'http://127.0.0.1:9', '--max-connections', '0'], io)).toBe(2)
    expect(lines.join('')).toMatch(/--max-connections must be at least 1/)
  })

  it('keeps the latest exchanges within its entry and character limits', () => {
    const lines: string[] = []
    const recording = new TapRecording((line) => lines.push(line))
    const request = { method: 'GET', httpVersion: '1.1', headers: {} } as Parameters<typeof newEntry>[0]
    const entryWith = (n: number, chars: number) => {
      const entry = newEntry(request, new URL(`http://upstream.test/v1/shape?n=${n}`), 0)
      entry.response.content.text = 'x'.repeat(chars)
      return entry
    }
    for (let n = 0; n < MAX_ENTRIES + 5; n++) recording.add(entryWith(n, 10))
    expect(recording.entries).toHaveLength(MAX_ENTRIES)
    expect(recording.entries[0]!.request.url).toContain('n=5')
    const big = MAX_BODY_CHARS
    for (let n = 0; n < MAX_RECORDED_CHARS / big + 3; n++) recording.add(entryWith(100_000 + n, big))
    const kept = recording.entries.reduce((sum, entry) => sum + entry.response.content.text.length, 0)
    expect(kept).toBeLessThanOrEqual(MAX_RECORDED_CHARS)
    expect(recording.entries.at(-1)!.request.url).toContain(`n=${100_000 + MAX_RECORDED_CHARS / big + 2}`)
    expect(lines).toEqual([expect.stringMatching(/keeps the latest 10000 exchanges and 100 million characters/)])
  })
})
