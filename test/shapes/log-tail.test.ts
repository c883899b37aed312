import { describe, expect, it } from 'vitest'
import { LogTail } from '../../src/main/shapes/storage/log-tail'

function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state / 2 ** 31
  }
}

describe('the in-memory tail of a log', () => {
  it('holds the newest bytes (at least half its size) after any run of appends, small and larger than itself', () => {
    const next = random(7)
    const maxBytes = 64 * 1024
    const tail = new LogTail(maxBytes, 1000)
    let log = Buffer.alloc(0)
    let end = 1000
    for (let round = 0; round < 2000; round++) {
      const size = next() < 0.02 ? Math.floor(next() * 3 * maxBytes) : Math.floor(next() * 900)
      const text = Buffer.alloc(size, round % 251)
      for (let at = 0; at < size; at += 97) text[at] = Math.floor(next() * 256)
      tail.append(text)
      log = Buffer.concat([log, text]).subarray(-4 * maxBytes)
      end += size
      const held = end - tail.start
      expect(held).toBeLessThanOrEqual(maxBytes)
      expect(held).toBeGreaterThanOrEqual(Math.min(maxBytes / 2, end - 1000))
      expect(tail.slice(tail.start, held).equals(log.subarray(log.length - held))).toBe(true)
    }
  })

  it('never changes bytes it handed out', () => {
    const tail = new LogTail(8 * 1024, 0)
    const handedOut: Array<{ slice: Buffer; copy: Buffer }> = []
    let position = 0
    for (let round = 0; round < 500; round++) {
      const text = Buffer.from(`line ${round} ${'x'.repeat(round % 300)}\n`)
      tail.append(text)
      const slice = tail.slice(position, text.length)
      handedOut.push({ slice, copy: Buffer.from(slice) })
      position += text.length
    }
    for (const { slice, copy } of handedOut) expect(slice.equals(copy)).toBe(true)
  })
})
