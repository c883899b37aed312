import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { ShapeRecorder, utf8Length } from '../../src/shared/shape-client'

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

/** A 5 MB body as a response's text (one flat string, as TextDecoder gives it). */
function recordLongBody(recorder: ShapeRecorder, index: number): void {
  const id = recorder.request('GET', 'http://127.0.0.1/v1/shape?offset=-1', [], 'off')
  const text = new TextDecoder().decode(new TextEncoder().encode(`${index}`.padEnd(5_000_000, 'x')))
  recorder.body(id, text, text.length)
}

describe('ShapeRecorder bodies', () => {
  it('keeps the cut of a long body, not the whole body behind it', () => {
    const recorder = new ShapeRecorder({ maxBodyChars: 1_000 })
    collectGarbage()
    const before = process.memoryUsage().heapUsed
    for (let index = 0; index < 20; index += 1) recordLongBody(recorder, index)
    collectGarbage()
    const kept = process.memoryUsage().heapUsed - before
    expect(recorder.exchanges.map((exchange) => exchange.body?.text.length)).toEqual(Array(20).fill(1_000))
    expect(recorder.exchanges.every((exchange) => exchange.body?.truncated)).toBe(true)
    // 20 × 5 MB bodies: what stays is their 1,000-character cuts (and the recorder), far below one body
    expect(kept).toBeLessThan(5_000_000)
  })
})

describe('utf8Length: a body’s size in bytes, from its text', () => {
  it('counts what TextEncoder would write, without encoding', () => {
    const texts = [
      '',
      '[{"key":"k"}]',
      'é – 漢字',
      '🙂 and 𝄞',
      'x'.repeat(100_000) + 'ü',
      'lone \ud800 high',
      'lone \udc00 low',
      'ends high \ud83d',
      '\ud83d\ud83d\ude42',
      '\u007f\u0080\u07ff\u0800\uffff'
    ]
    for (const text of texts) expect(utf8Length(text)).toBe(new TextEncoder().encode(text).byteLength)
  })
})
