import { createReadStream } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { Transform } from 'node:stream'
import type { ChunkSource, FileRange } from '../storage/shape'

const NEWLINE = 10
const COMMA = 44
/** Bytes read from a file at a time for one streaming response. */
const FILE_READ_BYTES = 64 * 1024

export const sourceLength = (source: ChunkSource): number =>
  'bytes' in source ? source.bytes.length : (source.prefix?.length ?? 0) + source.length

/** Lets go of a chunk whose response will not send it (a 304, a HEAD). */
export function releaseSource(source: ChunkSource): void {
  if ('bytes' in source) source.release(true)
}

/**
 * Sends a chunk and `suffix` as the body of `res` (whose head, content-length included, is written) and ends it.
 * Shared bytes are written as they are, never copied, and let go once the response finished or was cut short; a file
 * range is streamed a little at a time, as fast as the client takes it.
 */
export function sendSource(res: ServerResponse, source: ChunkSource, suffix: Buffer | null): void {
  if (!('bytes' in source)) return streamFile(res, source, suffix)
  res.once('finish', () => source.release(true))
  res.once('close', () => source.release(false))
  res.write(source.bytes)
  res.end(suffix ?? undefined)
}

function streamFile(res: ServerResponse, range: FileRange, suffix: Buffer | null): void {
  if (range.prefix) res.write(range.prefix)
  if (range.length === 0) {
    res.end(suffix ?? undefined)
    return
  }
  const file = createReadStream(range.path, {
    start: range.start,
    end: range.start + range.length - 1,
    highWaterMark: FILE_READ_BYTES
  })
  const bytes = range.newlinesToCommas ? file.pipe(newlinesToCommas()) : file
  const stop = () => file.destroy()
  res.once('close', stop)
  // a file that cannot be read any more (dropped shape) cuts the response: its length was promised
  file.once('error', () => res.destroy())
  bytes.pipe(res, { end: false })
  bytes.once('end', () => {
    res.off('close', stop)
    res.end(suffix ?? undefined)
  })
}

function newlinesToCommas(): Transform {
  return new Transform({
    // a file stream's chunks are its own fresh buffers: changed in place
    transform(chunk: Buffer, _encoding, done) {
      for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) chunk[at] = COMMA
      done(null, chunk)
    }
  })
}
