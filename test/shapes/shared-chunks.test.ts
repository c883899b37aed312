import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { sendSource, sourceLength } from '../../src/main/shapes/http/chunk-body'
import type { FileRange } from '../../src/main/shapes/storage/shape'
import { SharedChunks } from '../../src/main/shapes/storage/shared-chunks'

const size = (bytes: number) => () => Promise.resolve(bytes)
const unpooled = (bytes: Buffer) => Promise.resolve({ bytes, release: () => undefined })

describe('shared chunk bytes', () => {
  afterEach(() => vi.useRealTimers())

  it('loads a chunk once for every reader holding it, and lets it go after the last', async () => {
    const chunks = new SharedChunks(1000)
    let loads = 0
    const load = () => unpooled(Buffer.alloc(100, ++loads))
    const [a, b] = await Promise.all([chunks.acquire('k', size(100), load), chunks.acquire('k', size(100), load)])
    expect(a?.bytes).toBe(b?.bytes)
    expect(loads).toBe(1)
    a?.release(true)
    const c = await chunks.acquire('k', size(100), load)
    expect(c?.bytes).toBe(b?.bytes)
    b?.release(true)
    c?.release(true)
    const d = await chunks.acquire('k', size(100), load)
    expect(loads).toBe(2)
    d?.release(true)
  })

  it('stays under its limit: a chunk that does not fit is refused, kept chunks make room oldest first', async () => {
    const chunks = new SharedChunks(250)
    const load = () => unpooled(Buffer.alloc(100))
    const given: string[] = []
    chunks.keep('old', { bytes: Buffer.alloc(100), release: () => given.push('old') }, 60_000)
    chunks.keep('new', { bytes: Buffer.alloc(100), release: () => given.push('new') }, 60_000)
    const held = await chunks.acquire('a', size(100), load)
    expect(given).toEqual(['old'])
    expect(await chunks.acquire('b', size(100), load)).not.toBeNull()
    expect(given).toEqual(['old', 'new'])
    expect(await chunks.acquire('c', size(100), load)).toBeNull()
    held?.release(true)
  })

  it('waits for a reader following the kept chunks to make room, instead of letting go of those it has yet to read', async () => {
    const chunks = new SharedChunks(250)
    const given: string[] = []
    const kept = (name: string) => ({ bytes: Buffer.alloc(100), release: () => given.push(name) })
    const never = () => Promise.reject(new Error('kept chunks are not loaded'))
    await chunks.keep('0', kept('0'), 60_000, 1_000)
    await chunks.keep('1', kept('1'), 60_000, 1_000)
    const reading = await chunks.acquire('0', size(100), never)
    let third = false
    vi.useFakeTimers()
    const keeping = chunks.keep('2', kept('2'), 60_000, 1_000).then(() => (third = true))
    // a moment short of its patience: still waiting, whatever the machine's load
    await vi.advanceTimersByTimeAsync(999)
    expect(third).toBe(false)
    vi.useRealTimers()
    reading?.release(true)
    await keeping
    expect(given).toEqual(['0'])
    for (const key of ['1', '2']) (await chunks.acquire(key, size(100), never))?.release(true)
    expect(given).toEqual(['0', '1', '2'])
  })

  it('does not wait for a reader that stopped following: the oldest kept chunks make room', async () => {
    const chunks = new SharedChunks(250)
    const given: string[] = []
    const kept = (name: string) => ({ bytes: Buffer.alloc(100), release: () => given.push(name) })
    await chunks.keep('0', kept('0'), 60_000, 20)
    await chunks.keep('1', kept('1'), 60_000, 20)
    vi.useFakeTimers()
    const reading = await chunks.acquire('0', size(100), () => Promise.reject(new Error('kept')))
    // past its patience: the reader stopped following
    await vi.advanceTimersByTimeAsync(40)
    await chunks.keep('2', kept('2'), 60_000, 20)
    vi.useRealTimers()
    expect(given).toEqual(['1'])
    reading?.release(true)
  })

  it('lets a chunk waiting for room go once the shape is gone, and keeps none after', async () => {
    const chunks = new SharedChunks(150)
    const given: string[] = []
    const kept = (name: string) => ({ bytes: Buffer.alloc(100), release: () => given.push(name) })
    await chunks.keep('0', kept('0'), 60_000, 60_000)
    const reading = await chunks.acquire('0', size(100), () => Promise.reject(new Error('kept')))
    const waiting = chunks.keep('1', kept('1'), 60_000, 60_000)
    chunks.close()
    await waiting
    expect(given).toEqual(['1'])
    await chunks.keep('2', kept('2'), 60_000)
    expect(given).toEqual(['1', '2'])
    reading?.release(true)
  })

  it('gives a kept pooled buffer back only when no reader was cut short', async () => {
    const chunks = new SharedChunks(1000)
    const given: string[] = []
    chunks.keep('clean', { bytes: Buffer.alloc(10), release: () => given.push('clean') }, 60_000)
    chunks.keep('cut', { bytes: Buffer.alloc(10), release: () => given.push('cut') }, 60_000)
    const never = () => Promise.reject(new Error('kept chunks are not loaded'))
    const clean = await chunks.acquire('clean', size(10), never)
    const cut = await chunks.acquire('cut', size(10), never)
    clean?.release(true)
    cut?.release(false)
    expect(given).toEqual(['clean'])
  })

  it('gives a loaded pooled buffer back once its last reader is done, and never after a reader was cut short', async () => {
    const chunks = new SharedChunks(1000)
    const given: string[] = []
    const load = (name: string) => () => Promise.resolve({ bytes: Buffer.alloc(10), release: () => given.push(name) })
    const first = await chunks.acquire('loaded', size(10), load('loaded'))
    const second = await chunks.acquire('loaded', size(10), load('again'))
    first?.release(true)
    expect(given).toEqual([])
    second?.release(true)
    expect(given).toEqual(['loaded'])
    const cut = await chunks.acquire('cut', size(10), load('cut'))
    cut?.release(false)
    expect(given).toEqual(['loaded'])
  })
})

describe('a chunk streamed from its file', () => {
  let dir = ''
  afterEach(async () => dir && rm(dir, { recursive: true, force: true }))

  it('sends a log range as the JSON array a shared read gives, a little at a time', async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-range-'))
    const path = join(dir, 'log.jsonl')
    const lines = Array.from({ length: 5000 }, (_, n) => JSON.stringify({ n, text: 'line\u00e9 '.repeat(5) }))
    const before = 'x'.repeat(17)
    await writeFile(path, `${before}${lines.join('\n')}\nafter`)
    const range: FileRange = {
      path,
      start: before.length,
      length: Buffer.byteLength(lines.join('\n')),
      prefix: Buffer.from('['),
      newlinesToCommas: true
    }
    const suffix = Buffer.from(',{"end":true}]')
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(sourceLength(range) + suffix.length) })
      sendSource(res, range, suffix)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
      expect(JSON.parse(await response.text())).toEqual([
        ...lines.map((line) => JSON.parse(line) as unknown),
        { end: true }
      ])
    } finally {
      server.close()
    }
  })
})
