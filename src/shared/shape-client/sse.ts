/** One Server-Sent Events block as it arrived: a `data:` event or a comment such as `: keep-alive`. */
export type SseFrame = { kind: 'data'; data: string; raw: string } | { kind: 'comment'; text: string; raw: string }

/** Splits a text/event-stream into frames, chunk by chunk (frames may straddle chunks). */
export class SseParser {
  private buffer = ''

  push(chunk: string): SseFrame[] {
    this.buffer += chunk.replace(/\r\n?/g, '\n')
    const frames: SseFrame[] = []
    let end = this.buffer.indexOf('\n\n')
    while (end !== -1) {
      frames.push(...framesOf(this.buffer.slice(0, end)))
      this.buffer = this.buffer.slice(end + 2)
      end = this.buffer.indexOf('\n\n')
    }
    return frames
  }

  /** The stream ended: an unterminated last block is still delivered. */
  end(): SseFrame[] {
    const rest = this.buffer
    this.buffer = ''
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
