/** One Server-Sent Events block as it arrived: a `data:` event or a comment such as `: keep-alive`. */
export type SseFrame = { kind: 'data'; data: string; raw: string } | { kind: 'comment'; text: string; raw: string }

/**
 * Splits a text/event-stream into frames, chunk by chunk (frames may straddle chunks). The block being read is kept
 * in the pieces it came in and only the new text is searched, so a long block costs its length once, not once per
 * piece (a hostile stream of one endless line would otherwise cost the square of its length).
 */
export class SseParser {
  private pending: string[] = []
  /** The last character of the pending text: a `\n` there and one at the start of the next piece end a block. */
  private pendingLast = ''

  push(chunk: string): SseFrame[] {
    const text = chunk.replace(/\r\n?/g, '\n')
    const frames: SseFrame[] = []
    let from = 0
    if (this.pendingLast === '\n' && text.startsWith('\n')) {
      frames.push(...framesOf(this.pending.join('').slice(0, -1)))
      this.pending = []
      from = 1
    }
    for (let end = text.indexOf('\n\n', from); end !== -1; end = text.indexOf('\n\n', from)) {
      frames.push(...framesOf(this.pending.join('') + text.slice(from, end)))
      this.pending = []
      from = end + 2
    }
    const rest = text.slice(from)
    if (rest !== '') this.pending.push(rest)
    if (rest !== '' || from > 0) this.pendingLast = rest.slice(-1)
    return frames
  }

  /** The stream ended: an unterminated last block is still delivered. */
  end(): SseFrame[] {
    const rest = this.pending.join('')
    this.pending = []
    this.pendingLast = ''
    return rest.trim() === '' ? [] : framesOf(rest)
  }
}

function framesOf(block: string): SseFrame[] {
  const frames: SseFrame[] = []
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) frames.push({ kind: 'comment', text: line.slice(1).trimStart(), raw: line })
    else if (line === 'data' || line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
  }
  if (data.length > 0) frames.push({ kind: 'data', data: data.join('\n'), raw: block })
  return frames
}
